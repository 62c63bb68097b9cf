#include "envbox/util/fs.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "envbox/util/error.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/unique_fd.hpp"

namespace envbox {
namespace {

[[noreturn]] void fail(std::string_view what, const std::filesystem::path& path, int err) {
    throw sys_error(std::string(what) + " " + path.string(), err);
}

bool write_all(int fd, std::string_view data) {
    return write_all_fd(fd, data.data(), data.size());
}

// Calls `read(p, n, done)` (read or pread) until `size` bytes are in, retrying short reads
// and EINTR; false on failure (errno set) or at the file's end (errno 0).
template <class Read>
bool read_exactly(void* data, std::size_t size, Read read) {
    char* p = static_cast<char*>(data);
    std::uint64_t done = 0;
    while (done < size) {
        const ssize_t n = read(p + done, size - done, done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = 0;
            return false;
        }
        done += static_cast<std::uint64_t>(n);
    }
    return true;
}

}  // namespace

bool write_all_fd(int fd, const void* data, std::size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        ssize_t n = ::write(fd, p, size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool read_exact_fd(int fd, void* data, std::size_t size) {
    return read_exactly(data, size,
                        [fd](char* p, std::size_t n, std::uint64_t) { return ::read(fd, p, n); });
}

bool pread_exact_fd(int fd, void* data, std::size_t size, std::uint64_t offset) {
    return read_exactly(data, size, [fd, offset](char* p, std::size_t n, std::uint64_t done) {
        return ::pread(fd, p, n, static_cast<off_t>(offset + done));
    });
}

ScopedRemove::~ScopedRemove() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view content, mode_t mode,
                       Durability durability) {
    static std::atomic<unsigned> counter{0};
    // Unique per process and call, so concurrent writers never share a temporary file.
    std::filesystem::path tmp = path;
    tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    UniqueFd file(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
    if (!file) fail("cannot create", path, errno);  // the temporary name is ours, not the user's
    auto abandon = [&](std::string_view what, int err) {
        ::unlink(tmp.c_str());
        fail(what, path, err);
    };
    if (!write_all(file.get(), content)) abandon("cannot write", errno);
    if (::fchmod(file.get(), mode) != 0) abandon("cannot set the mode of", errno);
    if (durability == Durability::fsync && ::fsync(file.get()) != 0) abandon("cannot fsync", errno);
    if (::close(file.release()) != 0) abandon("cannot close", errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) abandon("cannot rename into", errno);
    if (durability == Durability::fsync) {
        auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
        UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!d || ::fsync(d.get()) != 0) fail("cannot fsync directory", dir, errno);
    }
}

std::string read_file(const std::filesystem::path& path) {
    UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!f) fail("cannot open", path, errno);
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(f.get(), buf, sizeof buf);
        if (n == 0) return out;
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("cannot read", path, errno);
        }
        out.append(buf, static_cast<std::size_t>(n));
    }
}

std::string read_input_file(const std::filesystem::path& path, std::size_t max_bytes,
                            ErrorCode code, Links links) {
    const int nofollow = links == Links::refuse ? O_NOFOLLOW : 0;
    UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC | nofollow | O_NONBLOCK | O_NOCTTY));
    if (!f && errno == ELOOP)
        throw Error(code, path.string() + " is a symbolic link; envbox reads it only as a file");
    if (!f) fail("cannot open", path, errno);
    struct stat st {};
    if (::fstat(f.get(), &st) != 0) fail("cannot stat", path, errno);
    if (!S_ISREG(st.st_mode))
        throw Error(code, path.string() + " is not a regular file (" +
                              (S_ISFIFO(st.st_mode)                         ? "a FIFO"
                               : S_ISDIR(st.st_mode)                        ? "a folder"
                               : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                            : "a socket") +
                              ")");
    const auto too_large = [&] {
        return Error(code,
                     path.string() + " is larger than " + std::to_string(max_bytes >> 20) + " MiB");
    };
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_large();
    std::string out;
    out.reserve(static_cast<std::size_t>(st.st_size));
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(f.get(), buf, sizeof buf);
        if (n == 0) return out;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("cannot read", path, errno);
        if (out.size() + static_cast<std::size_t>(n) > max_bytes) throw too_large();  // it grew
        out.append(buf, static_cast<std::size_t>(n));
    }
}

void start_writeback(int fd) {
    (void)::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

void sync_filesystem(const std::filesystem::path& path) {
    UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!f || ::syncfs(f.get()) != 0) fail("cannot sync the filesystem of", path, errno);
}

}  // namespace envbox

// ---- placing store objects, locks ------------------------------------------------------------

namespace envbox {
namespace {

bool copy_contents(int in, int out) {
    for (;;) {
        ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
        if (n == 0) return true;
        if (n > 0) continue;
        if (errno == EINTR) continue;
        if (errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL)
            return false;
        break;  // fall back to read/write
    }
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(in, buf, sizeof buf);
        if (n == 0) return true;
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (!write_all(out, std::string_view(buf, static_cast<std::size_t>(n)))) return false;
    }
}

// Clones (reflink) or copies src to dst through `ops`; returns 0 or an errno, and leaves no
// dst behind on failure. ENOTSUP from a clone means "try a copy".
// shape: two (directory, name) pairs as the *at(2) calls take them, then the mode and ops.
int clone_or_copy(const LinkOps& ops, int src_dir, const char* src, int dst_dir, const char* dst,
                  bool clone, mode_t mode) {
    UniqueFd in(::openat(src_dir, src, O_RDONLY | O_CLOEXEC));
    if (!in) return errno;
    UniqueFd out(::openat(dst_dir, dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!out) return errno;
    int err = clone ? ops.clone(in.get(), out.get()) : ops.copy(in.get(), out.get());
    if (err == 0 && ::fchmod(out.get(), mode) != 0) err = errno;
    if (err != 0) {
        ::unlinkat(dst_dir, dst, 0);
        return err;
    }
    return 0;
}

std::string describe_at(int dir, const char* name) {
    if (dir == AT_FDCWD || name[0] == '/') return name;
    char link[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", dir);
    std::error_code ec;
    auto base = std::filesystem::read_symlink(link, ec);
    return ec ? std::string(name) : (base / name).string();
}

}  // namespace

const char* link_mode_name(LinkMode mode) {
    switch (mode) {
        case LinkMode::hardlink:
            return "hardlink";
        case LinkMode::reflink:
            return "reflink";
        case LinkMode::copy:
            return "copy";
    }
    return "?";
}

LinkMode place_file(const std::filesystem::path& src, const std::filesystem::path& dst,
                    LinkMode mode, mode_t copy_mode) {
    return place_file_at(AT_FDCWD, src.c_str(), AT_FDCWD, dst.c_str(), mode, copy_mode);
}

int LinkOps::link(int src_dir, const char* src, int dst_dir, const char* dst) const {
    return ::linkat(src_dir, src, dst_dir, dst, 0) == 0 ? 0 : errno;
}

int LinkOps::clone(int in, int out) const {
    if (::ioctl(out, FICLONE, in) == 0) return 0;
    return errno == 0 ? EOPNOTSUPP : errno;
}

int LinkOps::copy(int in, int out) const {
    return copy_contents(in, out) ? 0 : errno;
}

const LinkOps& LinkOps::system() {
    static const LinkOps real;
    return real;
}

// shape: two (directory, name) pairs as linkat(2) takes them, then how to place the file.
LinkMode place_file_at(int src_dir, const char* src, int dst_dir, const char* dst, LinkMode mode,
                       mode_t copy_mode, const LinkOps& ops) {
    auto failed = [&](const char* what, int err) {
        fail(std::string(what) + " " + describe_at(src_dir, src) + " to", describe_at(dst_dir, dst),
             err);
    };
    if (mode == LinkMode::hardlink) {
        int err = ops.link(src_dir, src, dst_dir, dst);
        if (err == 0) return LinkMode::hardlink;
        if (err == EMLINK) {
            int e = clone_or_copy(ops, src_dir, src, dst_dir, dst, false, copy_mode);
            if (e != 0) failed("cannot copy", e);
            return LinkMode::copy;
        }
        if (err != EXDEV && err != EPERM && err != EOPNOTSUPP) failed("cannot link", err);
        mode = LinkMode::reflink;
    }
    if (mode == LinkMode::reflink) {
        int err = clone_or_copy(ops, src_dir, src, dst_dir, dst, true, copy_mode);
        if (err == 0) return LinkMode::reflink;
        if (err != EOPNOTSUPP && err != EXDEV && err != EINVAL && err != ENOTTY && err != EPERM)
            failed("cannot clone", err);
    }
    int err = clone_or_copy(ops, src_dir, src, dst_dir, dst, false, copy_mode);
    if (err != 0) failed("cannot copy", err);
    return LinkMode::copy;
}

// flock() needs no write access: a user who may only read a shared home (or a home on a
// read-only mount) still takes the locks of a no-op create, verify or `gc --dry-run`.
// O_NOFOLLOW: a link planted where a lock file should be (a dangling one most of all) would make
// O_CREAT create a file at its target; it is refused instead (the link rule, docs/SECURITY.md).
static int open_lock_file(const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
        int err = errno;
        fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) errno = err;
    }
    if (fd < 0 && errno == ELOOP) refuse_planted_link(path, /*folder=*/false);
    return fd;
}

const char* no_replace_method_name(NoReplaceMethod method) {
    return method == NoReplaceMethod::renameat2 ? "renameat2" : "link fallback";
}

int rename_noreplace_at(int src_dir, const char* src, int dst_dir, const char* dst,
                        NoReplaceMethod* used) {
    if (used) *used = NoReplaceMethod::renameat2;
    if (::renameat2(src_dir, src, dst_dir, dst, RENAME_NOREPLACE) == 0) return 0;
    int err = errno;
    // EINVAL: the filesystem has no RENAME_NOREPLACE (FUSE without rename2, the NFS client, 9p);
    // ENOSYS/EOPNOTSUPP: the kernel or filesystem has no renameat2 at all.
    if (err != EINVAL && err != ENOSYS && err != EOPNOTSUPP) return err;
    if (used) *used = NoReplaceMethod::link_unlink;
    if (::linkat(src_dir, src, dst_dir, dst, 0) != 0) return errno;  // EEXIST: someone else's
    // `dst` is in place; a staged name that cannot be removed is left for the caller's cleanup.
    (void)::unlinkat(src_dir, src, 0);
    return 0;
}

bool on_overlayfs(int fd) {
    constexpr long kOverlayfsMagic = 0x794C7630;  // OVERLAYFS_SUPER_MAGIC
    struct statfs sf {};
    return ::fstatfs(fd, &sf) == 0 && static_cast<long>(sf.f_type) == kOverlayfsMagic;
}

bool link_was_copied_up(const struct stat& object_before, int dst_dir, const char* dst) {
    struct stat now {};
    if (::fstatat(dst_dir, dst, &now, AT_SYMLINK_NOFOLLOW) != 0) return false;
    return now.st_ino != object_before.st_ino || now.st_nlink <= object_before.st_nlink;
}

FileLock::FileLock(const std::filesystem::path& path, const std::function<void()>& waiting) {
    UniqueFd fd(open_lock_file(path));
    if (!fd) fail("cannot open lock file", path, errno);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) fail("cannot lock", path, errno);
        if (waiting) waiting();
        while (::flock(fd.get(), LOCK_EX) != 0)
            if (errno != EINTR) fail("cannot lock", path, errno);
    }
    fd_ = std::move(fd);
}

FileLock FileLock::try_lock(const std::filesystem::path& path) {
    UniqueFd fd(open_lock_file(path));
    if (!fd) fail("cannot open lock file", path, errno);
    FileLock lock;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0)
        lock.fd_ = std::move(fd);
    else if (errno != EWOULDBLOCK)
        fail("cannot lock", path, errno);
    return lock;
}

FileLock FileLock::shared(const std::filesystem::path& path, const std::function<void()>& waiting) {
    UniqueFd fd(open_lock_file(path));
    if (!fd) fail("cannot open lock file", path, errno);
    if (::flock(fd.get(), LOCK_SH | LOCK_NB) != 0) {
        if (waiting) waiting();
        while (::flock(fd.get(), LOCK_SH) != 0)
            if (errno != EINTR) fail("cannot lock", path, errno);
    }
    FileLock lock;
    lock.fd_ = std::move(fd);
    return lock;
}

FileLock::FileLock(FileLock&& other) noexcept = default;
FileLock::~FileLock() = default;

}  // namespace envbox
