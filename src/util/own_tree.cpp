#include "envbox/util/own_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace fs = std::filesystem;

namespace envbox {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// The components of `rel`, which must be relative and free of `..` (paths built from `Home`).
std::vector<std::string> components(const fs::path& rel) {
    std::vector<std::string> out;
    for (const auto& part : rel.lexically_normal()) {
        const std::string s = part.string();
        if (s.empty() || s == ".") continue;
        if (s == ".." || s == "/")
            throw Error(ErrorCode::generic,
                        "internal: " + rel.string() + " is not a relative path");
        out.push_back(s);
    }
    return out;
}

fs::path relative_inside(const fs::path& root, const fs::path& path) {
    const fs::path rel = path.lexically_normal().lexically_relative(root.lexically_normal());
    if (rel.empty() || *rel.begin() == "..")
        throw Error(ErrorCode::generic,
                    "internal: " + path.string() + " does not lie inside " + root.string());
    return rel;
}

// Opens the child folder `name` of `dir`. ELOOP: a link (O_NOFOLLOW); ENOTDIR: a link to
// something else, or a file — told apart with one lstat.
UniqueFd open_child(int dir, const std::string& name, const fs::path& shown) {
    UniqueFd fd(::openat(dir, name.c_str(), kDirFlags));
    if (fd || errno == ENOENT) return fd;
    const int err = errno;
    struct stat st {};
    if ((err == ELOOP || err == ENOTDIR) &&
        ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        refuse_planted_link(shown);
    throw sys_error("cannot open the folder " + shown.string(), err);
}

UniqueFd walk(const fs::path& root, const fs::path& rel, bool create) {
    UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd && errno == ENOENT && !create) return fd;
    if (!fd && errno == ENOENT) {
        std::error_code ec;
        fs::create_directories(root, ec);
        fd.reset(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }
    if (!fd) throw sys_error("cannot open the folder " + root.string(), errno);
    fs::path shown = root;
    for (const auto& name : components(rel)) {
        shown /= name;
        UniqueFd next = open_child(fd.get(), name, shown);
        if (!next && create) {
            if (::mkdirat(fd.get(), name.c_str(), 0777) != 0 && errno != EEXIST)
                throw sys_error("cannot create " + shown.string(), errno);
            next = open_child(fd.get(), name, shown);
        }
        if (!next) return next;
        fd = std::move(next);
    }
    return fd;
}

OwnEntry::Type type_of(mode_t mode) {
    if (S_ISDIR(mode)) return OwnEntry::Type::folder;
    if (S_ISREG(mode)) return OwnEntry::Type::file;
    if (S_ISLNK(mode)) return OwnEntry::Type::link;
    return OwnEntry::Type::other;
}

}  // namespace

void refuse_planted_link(const fs::path& path, bool folder) {
    throw Error(ErrorCode::integrity,
                path.string() + " is a symbolic link where envbox keeps its own " +
                    (folder ? "folder" : "file") +
                    "; envbox never follows links inside its home or a project's .envbox, so "
                    "nothing was done through it (remove the link if you did not put it there, "
                    "or point ENVBOX_HOME at the real folder)");
}

UniqueFd open_own_dir(const fs::path& root, const fs::path& rel) {
    return walk(root, rel, false);
}

UniqueFd make_own_dir(const fs::path& root, const fs::path& rel) {
    return walk(root, rel, true);
}

UniqueFd open_own_dir_at_path(const fs::path& root, const fs::path& path) {
    if (path.lexically_normal() == root.lexically_normal()) return walk(root, {}, false);
    return walk(root, relative_inside(root, path), false);
}

UniqueFd make_own_dir_at_path(const fs::path& root, const fs::path& path) {
    if (path.lexically_normal() == root.lexically_normal()) return walk(root, {}, true);
    return walk(root, relative_inside(root, path), true);
}

std::vector<OwnEntry> list_own_dir(int dir, const fs::path& shown) {
    std::vector<OwnEntry> out;
    // fdopendir takes the descriptor it is given: a duplicate keeps `dir` the caller's.
    int copy = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) throw sys_error("cannot read the folder " + shown.string(), errno);
    DIR* d = ::fdopendir(copy);
    if (!d) {
        const int err = errno;
        ::close(copy);
        throw sys_error("cannot read the folder " + shown.string(), err);
    }
    ::rewinddir(d);
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        struct stat st {};
        if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
        out.push_back({name, type_of(st.st_mode), S_ISREG(st.st_mode) ? st.st_size : 0});
        errno = 0;
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0) throw sys_error("cannot read the folder " + shown.string(), err);
    std::sort(out.begin(), out.end(),
              [](const OwnEntry& a, const OwnEntry& b) { return a.name < b.name; });
    return out;
}

std::uint64_t remove_own_entry(int dir, const std::string& name, const fs::path& shown) {
    const fs::path path = shown / name;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return 0;
        throw sys_error("cannot remove " + path.string(), errno);
    }
    if (!S_ISDIR(st.st_mode)) {
        if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT)
            throw sys_error("cannot remove " + path.string(), errno);
        return S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
    }
    // A generation's folders are read-only: its owner may still empty them once writable.
    if ((st.st_mode & 0700) != 0700) (void)::fchmodat(dir, name.c_str(), st.st_mode | 0700, 0);
    std::uint64_t bytes = 0;
    {
        UniqueFd child(::openat(dir, name.c_str(), kDirFlags));
        if (!child && errno == ENOENT) return 0;
        // Swapped for a link since the fstatat: that link is what is removed.
        if (!child && (errno == ELOOP || errno == ENOTDIR))
            return remove_own_entry(dir, name, shown);
        if (!child) throw sys_error("cannot open the folder " + path.string(), errno);
        for (const auto& e : list_own_dir(child.get(), path))
            bytes += remove_own_entry(child.get(), e.name, path);
    }
    if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
        throw sys_error("cannot remove " + path.string(), errno);
    return bytes;
}

bool remove_own_tree(const fs::path& root, const fs::path& path) {
    const fs::path rel = relative_inside(root, path);
    if (rel == ".")
        throw Error(ErrorCode::generic, "internal: refusing to remove " + root.string());
    UniqueFd parent = walk(root, rel.parent_path(), false);
    if (!parent) return false;
    const std::string name = rel.filename().string();
    struct stat st {};
    if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
    remove_own_entry(parent.get(), name, path.parent_path());
    return true;
}

void require_no_link_below(const fs::path& root, const fs::path& path, bool is_file) {
    fs::path shown = root;
    for (const auto& name : components(relative_inside(root, path))) {
        shown /= name;
        struct stat st {};
        if (::lstat(shown.c_str(), &st) != 0) return;
        if (S_ISLNK(st.st_mode)) refuse_planted_link(shown, /*folder=*/!(is_file && shown == path));
    }
}

UniqueFd open_own_file(int dir, const fs::path& path, int flags, struct stat& st) {
    const std::string name = path.filename().string();
    UniqueFd fd(::openat(dir, name.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666));
    if (!fd && errno == ENOENT && !(flags & O_CREAT)) return fd;
    if (!fd && errno == ELOOP) refuse_planted_link(path, /*folder=*/false);
    // A FIFO with no reader refuses a non-blocking open for writing (ENXIO); a device may refuse
    // too: neither is a file of envbox's.
    if (!fd && (errno == ENXIO || errno == ENODEV))
        throw Error(ErrorCode::integrity, path.string() +
                                              " is not a regular file (a FIFO or a device); "
                                              "envbox writes a plain file there (remove it if you "
                                              "did not put it there)");
    if (!fd) throw sys_error("cannot open " + path.string(), errno);
    if (::fstat(fd.get(), &st) != 0) throw sys_error("cannot read " + path.string(), errno);
    if (!S_ISREG(st.st_mode))
        throw Error(ErrorCode::integrity,
                    path.string() +
                        " is not a regular file; envbox writes a plain file there "
                        "(remove it if you did not put it there)");
    return fd;
}

std::optional<std::string> read_own_file(int dir, const fs::path& path, std::size_t limit) {
    struct stat st {};
    UniqueFd fd = open_own_file(dir, path, O_RDONLY, st);
    if (!fd) return std::nullopt;
    if (static_cast<std::uint64_t>(st.st_size) > limit)
        throw Error(ErrorCode::integrity,
                    path.string() + " holds " + std::to_string(st.st_size) +
                        " bytes, more than envbox ever writes there (at most " +
                        std::to_string(limit) + "); it was not read");
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw sys_error("cannot read " + path.string(), errno);
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > limit)
            throw Error(ErrorCode::integrity, path.string() + " grew past " +
                                                  std::to_string(limit) +
                                                  " bytes while it was read; it was not read");
    }
    return out;
}

// Replaces `path` (the entry of the open folder `dir` of that name) with `content`: a temporary
// file beside it, then one rename, which replaces a link itself and never writes through it; a
// link already there is refused all the same (the link rule). The mode is 0666 less the umask
// (envbox works under the home's), so every member of a group-shared home may change it.
void replace_own_file(int dir, const fs::path& path, std::string_view content) {
    const std::string name = path.filename().string();
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        refuse_planted_link(path, /*folder=*/false);
    const std::string tmp = "." + name + ".tmp." + std::to_string(::getpid());
    (void)::unlinkat(dir, tmp.c_str(), 0);
    UniqueFd file(
        ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
    if (!file) throw sys_error("cannot write " + path.string(), errno);
    auto fail = [&](int err) {
        (void)::unlinkat(dir, tmp.c_str(), 0);
        throw sys_error("cannot write " + path.string(), err);
    };
    if (!write_all_fd(file.get(), content.data(), content.size())) fail(errno);
    if (::fsync(file.get()) != 0) fail(errno);
    if (::close(file.release()) != 0) fail(errno);
    if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) fail(errno);
    (void)::fsync(dir);
}

FileTally tally_own_files(const fs::path& root, const fs::path& path) {
    require_no_link_below(root, path);
    FileTally out;
    std::error_code ec;
    std::uint64_t entries = 0;
    for (auto it = fs::recursive_directory_iterator(path, ec);  // links not followed
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        // Bounded: the tree is what the environment's own code wrote (a compile cache).
        if (++entries > kMaxTallyEntries) {
            out.partial = true;
            break;
        }
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0) continue;
        if (S_ISDIR(st.st_mode) && it.depth() + 1 >= static_cast<int>(kMaxTallyDepth)) {
            it.disable_recursion_pending();  // one open folder per level: never 25 000 of them
            out.partial = true;
        }
        if (S_ISREG(st.st_mode)) {
            ++out.files;
            out.bytes += static_cast<std::uint64_t>(st.st_size);
        }
    }
    return out;
}

RemoveOwnTree::~RemoveOwnTree() {
    if (path.empty()) return;  // released: kept after all
    try {
        remove_own_tree(root, path);
    } catch (...) {  // never out of a destructor: a folder left in tmp/ costs only space
    }
}

}  // namespace envbox
