#include "envbox/install/sdist.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "envbox/index/url.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/unique_fd.hpp"
#include "envbox/util/zip.hpp"

namespace fs = std::filesystem;

namespace envbox::install {
namespace {

bool ends_with(const std::string& s, std::string_view tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Makes the members of one archive under `dest`, checking each name as it comes.
class Unpacker {
  public:
    Unpacker(fs::path archive, fs::path dest)
        : archive_(std::move(archive)), dest_(std::move(dest)) {}

    // The member's path under `dest`, its folders made; refuses what may not be unpacked.
    fs::path place(std::string name, bool directory) {
        const std::string what = archive_.string() + " member '" + name.substr(0, 200) + "'";
        while (name.rfind("./", 0) == 0)
            name.erase(0, 2);
        while (!name.empty() && name.back() == '/')
            name.pop_back();
        if (name.empty() || name.front() == '/')
            throw Error(ErrorCode::integrity, what + " has an absolute or empty name");
        fs::path rel;
        std::size_t at = 0;
        while (at <= name.size()) {
            std::size_t slash = name.find('/', at);
            if (slash == std::string::npos) slash = name.size();
            const std::string part = name.substr(at, slash - at);
            if (part.empty() || part == "." || part == "..")
                throw Error(ErrorCode::integrity,
                            what + " has a name with an empty, '.' or '..' component");
            rel /= part;
            at = slash + 1;
        }
        const std::string top = rel.begin()->string();
        if (top_.empty()) top_ = top;
        if (top != top_)
            throw Error(ErrorCode::integrity,
                        what + " is outside the archive's one top-level folder '" + top_ + "'");
        if (!directory && !files_.insert(rel.string()).second)
            throw Error(ErrorCode::integrity, what + " is in the archive twice");
        const fs::path out = dest_ / rel;
        make_dirs(directory ? rel : rel.parent_path(), what);
        return out;
    }

    // A file member's bytes, written to a new file (never through a link or over a file).
    UniqueFd create(const fs::path& out, std::uint32_t mode, const std::string& name) {
        UniqueFd fd(::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           (mode & 0111) ? 0755 : 0644));
        if (!fd)
            throw Error(ErrorCode::integrity, archive_.string() + " member '" + name +
                                                  "' cannot be made: " + std::strerror(errno));
        return fd;
    }

    fs::path project() const {
        if (top_.empty()) throw Error(ErrorCode::integrity, archive_.string() + " is empty");
        const fs::path dir = dest_ / top_;
        std::error_code ec;
        if (!fs::is_regular_file(fs::symlink_status(dir / "pyproject.toml", ec)) &&
            !fs::is_regular_file(fs::symlink_status(dir / "setup.py", ec)))
            throw Error(ErrorCode::integrity, archive_.string() + ": " + top_ +
                                                  "/ holds neither pyproject.toml nor setup.py");
        return dir;
    }

  private:
    void make_dirs(const fs::path& rel, const std::string& what) {
        fs::path at = dest_;
        for (const auto& part : rel) {
            at /= part;
            if (::mkdir(at.c_str(), 0755) == 0) continue;
            if (errno != EEXIST)
                throw Error(ErrorCode::generic,
                            what + ": cannot make " + at.string() + ": " + std::strerror(errno));
            struct stat st {};
            if (::lstat(at.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
                throw Error(ErrorCode::integrity, what + " needs " + at.string() +
                                                      " to be a folder, and a file has that name");
        }
    }

    fs::path archive_, dest_;
    std::string top_;
    std::set<std::string> files_;
};

void write_all(int fd, const char* data, std::size_t size, const fs::path& out) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw Error(ErrorCode::generic,
                        "cannot write " + out.string() + ": " + std::strerror(errno));
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

void unpack_tar(const fs::path& archive, Unpacker& u, const tar::Limits& limits) {
    std::optional<UniqueFd> open;
    fs::path out;
    tar::read_tar_gz(archive.string(), limits, [&](const tar::Entry& e) -> tar::Sink {
        out = u.place(e.name, e.directory);
        if (e.directory) return {};
        open.emplace(u.create(out, e.mode, e.name));
        return [&](const char* data, std::size_t size) { write_all(open->get(), data, size, out); };
    });
}

void unpack_zip(const fs::path& archive, Unpacker& u, const tar::Limits& limits) {
    zip::File file(archive.string());
    if (file.members().size() > limits.max_members)
        throw Error(ErrorCode::integrity, archive.string() + " has more than " +
                                              std::to_string(limits.max_members) + " members");
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < file.members().size(); ++i) {
        const zip::Member& m = file.members()[i];
        const std::uint32_t type = m.unix_mode() & S_IFMT;
        if (type != 0 && type != S_IFREG && type != S_IFDIR)
            throw Error(ErrorCode::integrity,
                        archive.string() + " member '" + m.name +
                            "' is no regular file or folder (a link?); a source distribution "
                            "holds regular files and directories only");
        total += m.size;
        if (m.size > limits.max_member || total > limits.max_total)
            throw Error(ErrorCode::integrity, archive.string() + " member '" + m.name +
                                                  "' is past the archive's size limits");
        const bool directory = m.is_directory() || type == S_IFDIR;
        const fs::path out = u.place(m.name, directory);
        if (directory) continue;
        UniqueFd fd = u.create(out, m.unix_mode(), m.name);
        file.extract(
            i, [&](const char* data, std::size_t size) { write_all(fd.get(), data, size, out); });
    }
}

}  // namespace

fs::path unpack_sdist(const fs::path& archive, const fs::path& dest, const tar::Limits& limits,
                      std::string filename) {
    const std::string name = filename.empty() ? archive.filename().string() : std::move(filename);
    const bool tar_gz = ends_with(name, ".tar.gz"), zip = ends_with(name, ".zip");
    if (!tar_gz && !zip)
        throw Error(ErrorCode::invalid_input,
                    archive.string() + " is no source distribution (.tar.gz or .zip)");
    if (::mkdir(dest.c_str(), 0700) != 0)
        throw Error(ErrorCode::generic,
                    "cannot make " + dest.string() + ": " + std::strerror(errno));
    try {
        Unpacker u(archive, dest);
        if (tar_gz)
            unpack_tar(archive, u, limits);
        else
            unpack_zip(archive, u, limits);
        return u.project();
    } catch (...) {
        remove_own_tree(dest.parent_path(), dest);
        throw;
    }
}

fs::path locate_sdist(const index::ArtifactRequest& request, const fs::path& lock_dir,
                      const fs::path& downloads, const index::HttpOptions& http, bool offline) {
    const auto holds = [&](const fs::path& p) {
        std::error_code ec;
        return fs::is_regular_file(p, ec) && to_hex(sha256_file(p)) == request.sha256;
    };
    if (auto local = index::local_artifact_path(request, lock_dir)) {
        if (!holds(*local))
            throw Error(ErrorCode::integrity, request.display + ": " + local->string() +
                                                  " does not hold the lock's sha256 " +
                                                  request.sha256);
        return *local;
    }
    const fs::path cached = index::download_path(downloads, request.sha256);
    if (holds(cached)) return cached;
    if (offline)
        throw Error(ErrorCode::network, "--offline: " + request.display +
                                            " would be downloaded from " +
                                            index::redact_url(request.location));
    std::error_code ec;
    fs::remove(cached, ec);
    fs::create_directories(downloads, ec);
    index::HttpClient client(http);
    index::download_artifact(client, request, downloads);
    if (!holds(cached)) {
        fs::remove(cached, ec);
        throw Error(ErrorCode::integrity, "hash mismatch for " + request.display +
                                              " downloaded from " +
                                              index::redact_url(request.location) +
                                              ": not the lock's sha256 " + request.sha256);
    }
    return cached;
}

}  // namespace envbox::install
