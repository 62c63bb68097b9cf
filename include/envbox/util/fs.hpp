#pragma once
/// Filesystem primitives with the guarantees the store and generations rely on.

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string_view>

#include "envbox/util/error.hpp"
#include "envbox/util/unique_fd.hpp"

namespace envbox {

/// How durable a write must be before it becomes visible.
enum class Durability {
    none,   ///< rename only; the caller makes a batch durable with one `sync_filesystem`
    fsync,  ///< fsync the file before the rename and the directory after it
};

/// Writes `content` to `path` atomically: a temporary file in the same directory, then
/// rename(2) over `path`. Readers see the old file or the new one, never a partial one; on any
/// failure the temporary file is removed, `path` is untouched and `Error` names the path and
/// the system error (ENOSPC, EACCES, …).
void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       mode_t mode = 0644, Durability durability = Durability::fsync);

/// Writes all of `data` to `fd`, retrying short writes and EINTR; false (errno set) on failure.
bool write_all_fd(int fd, const void* data, std::size_t size);

/// Reads exactly `size` bytes of `fd` into `data`, retrying short reads and EINTR; false on
/// failure (errno set) or when the file ends first (errno 0).
bool read_exact_fd(int fd, void* data, std::size_t size);
/// `read_exact_fd` at `offset`, leaving the file's offset alone (pread: safe from many threads).
bool pread_exact_fd(int fd, void* data, std::size_t size, std::uint64_t offset);

/// Removes a path (file or tree) when it goes out of scope: temporary downloads and staging.
class ScopedRemove {
  public:
    explicit ScopedRemove(std::filesystem::path path) : path_(std::move(path)) {}
    ~ScopedRemove();
    ScopedRemove(const ScopedRemove&) = delete;
    ScopedRemove& operator=(const ScopedRemove&) = delete;
    const std::filesystem::path& path() const { return path_; }
    void release() { path_.clear(); }  ///< keep the path after all

  private:
    std::filesystem::path path_;
};

/// Reads a whole file; throws `Error` naming the path on failure.
std::string read_file(const std::filesystem::path& path);

/// The bound of every lock and manifest envbox reads (the TOML reader's own).
inline constexpr std::size_t kMaxInputFileBytes = 16u << 20;

/// Reads a file given as input (a lock of any kind, a manifest, a project file): opened without
/// following a link (unless `follow`: a manifest the user keeps elsewhere) and without
/// blocking, typed (a regular file only: no FIFO, device or folder) and sized (at most
/// `max_bytes`) before a byte is read, then read no further than that. Else `Error` with
/// `code`, naming the path and what it is.
enum class Links { refuse, follow };
std::string read_input_file(const std::filesystem::path& path,
                            std::size_t max_bytes = kMaxInputFileBytes,
                            ErrorCode code = ErrorCode::invalid_input, Links links = Links::refuse);
/// A manifest or `envbox.toml`: the user's own file, which may be a link to where they keep it.
inline std::string read_manifest_file(const std::filesystem::path& path) {
    return read_input_file(path, kMaxInputFileBytes, ErrorCode::invalid_input, Links::follow);
}

/// syncfs(2) on the filesystem holding `path`: one call makes every earlier write on that
/// filesystem durable (cheaper than one fsync per file for tens of thousands of files).
void sync_filesystem(const std::filesystem::path& path);

/// Starts writing `fd`'s dirty pages to disk now, without waiting (sync_file_range, WRITE only),
/// so a later `sync_filesystem` finds most of the data already written: the disk works while
/// the CPU goes on decoding. A hint; errors are ignored (the final sync reports real ones).
void start_writeback(int fd);

/// How a store object is placed into an environment.
enum class LinkMode {
    hardlink,  ///< link(2): no data copied, same inode (verify checks inode identity)
    reflink,   ///< FICLONE: copy-on-write clone (btrfs, XFS), its own inode
    copy,      ///< copy_file_range(2)/read-write copy
};

/// "hardlink", "reflink" or "copy".
const char* link_mode_name(LinkMode mode);

/// The system calls that place one store object, behind one interface so the fallbacks of
/// `place_file_at` are tested in-process with injected faults (EMLINK, EXDEV, ENOSPC), as
/// ninja's `DiskInterface` has its test double. The base class makes the real calls; a test
/// overrides what it breaks. Every member returns 0 or the errno and is thread-safe.
class LinkOps {
  public:
    virtual ~LinkOps() = default;
    /// linkat(2) of `src` (relative to `src_dir`) as `dst` (relative to `dst_dir`), no flags.
    virtual int link(int src_dir, const char* src, int dst_dir, const char* dst) const;
    /// FICLONE: makes the empty file `out` a copy-on-write clone of `in`.
    virtual int clone(int in, int out) const;
    /// Copies all of `in` into the empty file `out` (copy_file_range(2), else read/write).
    virtual int copy(int in, int out) const;
    /// The real calls.
    static const LinkOps& system();
};

/// Places the file `src` at `dst` (which must not exist) using `mode`, falling back along
/// hardlink → reflink → copy when the filesystem refuses (EXDEV across filesystems, EPERM where
/// hard links are forbidden, EOPNOTSUPP/EINVAL without reflink support). EMLINK (the per-inode
/// link limit, reached by a popular object such as the empty file) falls back to a copy for
/// that one file. Returns the mode actually used. `dst` gets the mode bits `copy_mode` when it
/// is not a hard link. Any other failure (ENOSPC, EIO, …) throws `Error` naming both paths,
/// with `sys_errno()` the cause, and leaves no `dst` behind (a partial clone or copy is
/// removed).
LinkMode place_file(const std::filesystem::path& src, const std::filesystem::path& dst,
                    LinkMode mode, mode_t copy_mode);

/// `place_file` with paths relative to directory descriptors (AT_FDCWD for the working
/// directory): the installer keeps the store's object directory and each destination directory
/// open, so a link costs no walk of the full paths. The calls go through `ops`.
LinkMode place_file_at(int src_dir, const char* src, int dst_dir, const char* dst, LinkMode mode,
                       mode_t copy_mode, const LinkOps& ops = LinkOps::system());

/// How `rename_noreplace_at` moved a file into place.
enum class NoReplaceMethod {
    renameat2,    ///< renameat2(RENAME_NOREPLACE): one atomic call
    link_unlink,  ///< linkat (atomic, EEXIST when taken) then unlink of the source
};

/// "renameat2" or "link fallback".
const char* no_replace_method_name(NoReplaceMethod method);

/// Moves `src` to `dst` only when `dst` does not exist, atomically: a concurrent writer of the
/// same name never has its file replaced. renameat2(RENAME_NOREPLACE) where the filesystem has
/// it; where it answers EINVAL, ENOSYS or EOPNOTSUPP (NFS, sshfs and other FUSE filesystems,
/// 9p) linkat of `src` to `dst`, just as atomic and failing with EEXIST too, then unlink of
/// `src` (an unlink that fails leaves `src` behind, never a missing `dst`). Returns 0, or the
/// errno: EEXIST when `dst` exists (`src` is then untouched). `used` (optional) tells which way
/// was taken.
int rename_noreplace_at(int src_dir, const char* src, int dst_dir, const char* dst,
                        NoReplaceMethod* used = nullptr);

/// True when the file or directory open as `fd` lies on overlayfs (statfs f_type).
bool on_overlayfs(int fd);

/// Whether hard-linking an object just copied it: overlayfs copies a file of a lower layer (a
/// container image's) up into the upper layer before it links it, so the link is a full copy.
/// `object_before` is the object's stat taken before the link, `dst` the name just linked. The
/// link was a copy-up when the new name has another inode, or when the object's links did not
/// grow (the copy-up left the lower layer's other names behind). An object of a lower layer
/// that had no other link keeps its inode number across a copy-up and is not detected.
bool link_was_copied_up(const struct stat& object_before, int dst_dir, const char* dst);

/// Exclusive advisory lock (flock(2)) on a lock file, created if needed; released on
/// destruction. Locks die with their process, so a crash never leaves a stale lock.
class FileLock {
  public:
    /// Blocks until the lock is held. When another process holds it and `waiting` is set, it is
    /// called once before blocking (to tell the user why nothing happens).
    explicit FileLock(const std::filesystem::path& path, const std::function<void()>& waiting = {});
    /// Tries once; returns an unlocked FileLock (`held()` false) when another process holds it.
    static FileLock try_lock(const std::filesystem::path& path);
    /// A shared lock: any number of holders, excluded only by an exclusive one (blocks).
    static FileLock shared(const std::filesystem::path& path,
                           const std::function<void()>& waiting = {});
    FileLock(FileLock&& other) noexcept;
    FileLock& operator=(FileLock&&) = delete;
    FileLock(const FileLock&) = delete;
    ~FileLock();
    bool held() const { return static_cast<bool>(fd_); }

  private:
    FileLock() = default;
    UniqueFd fd_;
};

}  // namespace envbox
