#pragma once
/// Folders of envbox's own: everything below `ENVBOX_HOME` and below a project's `.envbox`.
///
/// The link rule (docs/SECURITY.md): the root is the folder the user named (`ENVBOX_HOME`, the
/// project root) and may be reached through links; below it, envbox never follows a symbolic
/// link where it expects a folder or a file of its own. Someone other than the user can plant
/// such a link (a member of a group-shared home, a committed `.envbox` in a repository), and
/// following it would make `delete`, `gc` or `cache clean` empty the link's target, or make
/// `create` write there. Every walk, create and removal below a root goes through this file:
/// each component is opened relative to the one above it with `O_DIRECTORY|O_NOFOLLOW`
/// (`openat`), entries are examined with `AT_SYMLINK_NOFOLLOW` and removed with `unlinkat` on
/// the folder's descriptor, as Nix's and systemd's removal helpers do. A link met on the way to
/// a folder is an `Error` (`ErrorCode::integrity`) naming its path; a link met *inside* a tree
/// being removed is removed itself, never what it points to.

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/util/unique_fd.hpp"

namespace envbox {

/// The error for a symbolic link found at `path` where envbox expects its own folder (or file,
/// `folder` false): exit 5, with what to do about it.
[[noreturn]] void refuse_planted_link(const std::filesystem::path& path, bool folder = true);

/// Opens `root/rel` as a folder: `root` as given (links allowed: the user named it), each
/// component of `rel` with `openat(O_DIRECTORY|O_NOFOLLOW)` relative to the one before. `rel`
/// must be relative with no `..` (a programming error otherwise). Returns an empty descriptor
/// when a component does not exist; throws `refuse_planted_link` when one is a link, and a
/// system `Error` naming the path for anything else (a file where a folder should be, EACCES).
UniqueFd open_own_dir(const std::filesystem::path& root, const std::filesystem::path& rel);

/// The same, creating each missing component (`mkdirat`, mode 0777 less the umask) without
/// following links: a concurrent creator of the same folder is fine (EEXIST, then opened).
UniqueFd make_own_dir(const std::filesystem::path& root, const std::filesystem::path& rel);

/// `open_own_dir(root, path relative to root)` for a `path` lexically inside `root` (throws
/// `Error` if it is not: callers build such paths from `Home`).
UniqueFd open_own_dir_at_path(const std::filesystem::path& root, const std::filesystem::path& path);
UniqueFd make_own_dir_at_path(const std::filesystem::path& root, const std::filesystem::path& path);

/// One entry of an own folder, typed without following links.
struct OwnEntry {
    std::string name;
    enum class Type { folder, file, link, other } type = Type::other;
    off_t size = 0;  ///< of a file; 0 otherwise
};

/// The entries of the open folder `dir` (not `.` and `..`), sorted by name; `shown` names it in
/// errors.
std::vector<OwnEntry> list_own_dir(int dir, const std::filesystem::path& shown);

/// Removes the entry `name` of the open folder `dir`: a file or a link is unlinked (a link,
/// never its target); a folder is opened with `O_NOFOLLOW`, emptied the same way, then removed.
/// Read-only folders below (a generation's) are made writable first. A missing entry is not an
/// error. Returns the bytes of the files removed. Throws a system `Error` naming `shown/name`.
std::uint64_t remove_own_entry(int dir, const std::string& name,
                               const std::filesystem::path& shown);

/// Removes `path` (a file, link or whole tree), which must lie lexically inside `root`, never
/// following a link below `root`: a link on the way to it is refused (`refuse_planted_link`),
/// a link that *is* `path`, or lies inside its tree, is removed itself. False when `path` did
/// not exist.
bool remove_own_tree(const std::filesystem::path& root, const std::filesystem::path& path);

/// A work folder `path` below `root` (the home's tmp/), removed by `remove_own_tree` when this
/// goes out of scope; a failure then is passed over (a folder left in tmp/ costs only space).
/// `path.clear()` keeps it after all.
struct RemoveOwnTree {
    std::filesystem::path root, path;
    RemoveOwnTree(std::filesystem::path r, std::filesystem::path p)
        : root(std::move(r)), path(std::move(p)) {}
    ~RemoveOwnTree();
    RemoveOwnTree(const RemoveOwnTree&) = delete;
    RemoveOwnTree& operator=(const RemoveOwnTree&) = delete;
};

/// Opens the regular file of the open folder `dir` named `path.filename()` (`path` names it in
/// errors) with `flags` (O_RDONLY, or O_WRONLY|O_APPEND|O_CREAT: mode 0666 less the umask),
/// never through a link (`refuse_planted_link`) and without blocking on a FIFO; anything but a
/// regular file is refused (integrity). `st` gets its stat. Empty when it does not exist and
/// `flags` has no O_CREAT.
UniqueFd open_own_file(int dir, const std::filesystem::path& path, int flags, struct stat& st);

/// The regular file of the open folder `dir` named `path.filename()` (`path` names it in
/// errors), at most `limit` bytes; nullopt when it does not exist. Never through a link
/// (`refuse_planted_link`); a FIFO, a device or a folder is refused without blocking, and so is
/// a file larger than `limit` (integrity, exit 5, naming it).
std::optional<std::string> read_own_file(int dir, const std::filesystem::path& path,
                                         std::size_t limit);

/// Replaces the entry named `path.filename()` of the open folder `dir` with `content` (`path`
/// names it in errors): a temporary file beside it, then one rename, which replaces a link
/// itself and never writes through it; a link already there is refused all the same
/// (`refuse_planted_link`). The mode is 0666 less the umask (envbox works under the home's), so
/// every member of a group-shared home may change it. Throws a system `Error` naming `path`.
void replace_own_file(int dir, const std::filesystem::path& path, std::string_view content);

/// The regular files anywhere below the folder `path` (inside `root`) and their apparent bytes,
/// never through a link: `require_no_link_below` first, then a walk that follows none. Nothing
/// when it does not exist. For the counts `show` and `check` give of compile caches. Bounded:
/// no deeper than `kMaxTallyDepth` folders and no more than `kMaxTallyEntries` entries (the
/// tree is what an environment's code wrote); `partial` says a bound cut it short.
inline constexpr std::size_t kMaxTallyDepth = 128;
inline constexpr std::uint64_t kMaxTallyEntries = 10'000'000;
struct FileTally {
    std::uint64_t files = 0, bytes = 0;
    bool partial = false;
};
FileTally tally_own_files(const std::filesystem::path& root, const std::filesystem::path& path);

/// Throws `refuse_planted_link` when `path` (inside `root`) or a folder between `root` and it
/// is a symbolic link; nothing when it or a folder above it does not exist. For readers that
/// then use path-based calls: the check costs one `lstat` per component. Destructive code uses
/// the descriptor-based calls above, which cannot be raced. `is_file`: `path` names a file (for
/// the message).
void require_no_link_below(const std::filesystem::path& root, const std::filesystem::path& path,
                           bool is_file = false);

}  // namespace envbox
