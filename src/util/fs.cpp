#include "envbox/util/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "envbox/util/error.hpp"

namespace envbox {
namespace {

[[noreturn]] void fail(std::string_view what, const std::filesystem::path& path, int err) {
    throw Error(ErrorCode::generic,
                std::string(what) + " " + path.string() + ": " + std::strerror(err));
}

// Closes a descriptor on scope exit.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content, mode_t mode,
                       Durability durability) {
    static std::atomic<unsigned> counter{0};
    // Unique per process and call, so concurrent writers never share a temporary file.
    std::filesystem::path tmp = path;
    tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    Fd file{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)};
    if (file.fd < 0) fail("cannot create", tmp, errno);
    auto abandon = [&](std::string_view what, int err) {
        ::unlink(tmp.c_str());
        fail(what, path, err);
    };
    if (!write_all(file.fd, content)) abandon("cannot write", errno);
    if (::fchmod(file.fd, mode) != 0) abandon("cannot set the mode of", errno);
    if (durability == Durability::fsync && ::fsync(file.fd) != 0) abandon("cannot fsync", errno);
    if (::close(file.fd) != 0) {
        file.fd = -1;
        abandon("cannot close", errno);
    }
    file.fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0) abandon("cannot rename into", errno);
    if (durability == Durability::fsync) {
        auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
        Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
        if (d.fd < 0 || ::fsync(d.fd) != 0) fail("cannot fsync directory", dir, errno);
    }
}

std::string read_file(const std::filesystem::path& path) {
    Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) fail("cannot open", path, errno);
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(f.fd, buf, sizeof buf);
        if (n == 0) return out;
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("cannot read", path, errno);
        }
        out.append(buf, static_cast<std::size_t>(n));
    }
}

void sync_filesystem(const std::filesystem::path& path) {
    Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0 || ::syncfs(f.fd) != 0) fail("cannot sync the filesystem of", path, errno);
}

}  // namespace envbox
