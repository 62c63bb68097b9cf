#include "landlock.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "envbox/util/unique_fd.hpp"

namespace envbox::env {
namespace {

// The kernel's ABI, spelled here so envbox builds against headers older than the running kernel
// (Debian 12's stop at ABI 2). The numbers are the same on every architecture.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
constexpr std::uint32_t create_ruleset_version = 1U << 0;
constexpr int rule_path_beneath = 1;
constexpr std::uint64_t write_file = 1ULL << 1, remove_dir = 1ULL << 4, remove_file = 1ULL << 5,
                        make_char = 1ULL << 6, make_dir = 1ULL << 7, make_reg = 1ULL << 8,
                        make_sock = 1ULL << 9, make_fifo = 1ULL << 10, make_block = 1ULL << 11,
                        make_sym = 1ULL << 12, refer = 1ULL << 13, truncate = 1ULL << 14;

// Only the first member: a size the oldest ABI accepts, and newer kernels take it as "no
// network or scope rules".
struct RulesetAttr {
    std::uint64_t handled_access_fs;
};
struct __attribute__((packed)) PathBeneathAttr {
    std::uint64_t allowed_access;
    std::int32_t parent_fd;
};

// The write rights of `abi`: ABI 2 adds REFER (without it handled, a rename across directories
// is always refused), ABI 3 TRUNCATE.
std::uint64_t write_rights(int abi) {
    std::uint64_t r = write_file | remove_dir | remove_file | make_char | make_dir | make_reg |
                      make_sock | make_fifo | make_block | make_sym;
    if (abi >= 2) r |= refer;
    if (abi >= 3) r |= truncate;
    return r;
}

bool add_rule(int ruleset, int fd, std::uint64_t rights) {
    PathBeneathAttr attr{rights, fd};
    return ::syscall(SYS_landlock_add_rule, ruleset, rule_path_beneath, &attr, 0) == 0;
}

// Grants `rights` beneath every entry of directory `dir` that neither is nor holds a protected
// path, and descends into those that hold one. A file gets only the rights a file can carry; a
// symlink nothing (its target is granted where it lives, or not at all when that is protected).
// Entries that vanish or cannot be opened are skipped.
std::optional<std::string> grant_around(int ruleset, const std::filesystem::path& dir,
                                        const std::vector<std::filesystem::path>& protect,
                                        std::uint64_t rights) {
    UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dfd) return "cannot read " + dir.string() + ": " + std::strerror(errno);
    DIR* d = ::fdopendir(::dup(dfd.get()));
    if (!d) return "cannot read " + dir.string() + ": " + std::strerror(errno);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
            names.emplace_back(e->d_name);
    ::closedir(d);
    for (const auto& name : names) {
        const std::filesystem::path path = dir / name;
        bool is_protected = false, holds_protected = false;
        for (const auto& p : protect) {
            is_protected = is_protected || p == path;
            holds_protected = holds_protected || is_at_or_below(p, path);
        }
        if (is_protected) continue;
        if (holds_protected) {
            if (auto why = grant_around(ruleset, path, protect, rights)) return why;
            continue;
        }
        UniqueFd fd(::openat(dfd.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
        std::uint64_t allowed = S_ISDIR(st.st_mode) ? rights : rights & (write_file | truncate);
        if (!add_rule(ruleset, fd.get(), allowed))
            return "cannot add a Landlock rule for " + path.string() + ": " + std::strerror(errno);
    }
    return std::nullopt;
}

}  // namespace

bool is_at_or_below(const std::filesystem::path& p, const std::filesystem::path& dir) {
    auto [d, q] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
    return d == dir.end();
}

LandlockSupport landlock_support() {
    long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, create_ruleset_version);
    if (abi > 0) return {static_cast<int>(abi), {}};
    if (errno == ENOSYS)
        return {0,
                "this kernel has no Landlock (Linux 5.13 or newer with CONFIG_SECURITY_LANDLOCK)"};
    if (errno == EOPNOTSUPP)
        return {
            0, "Landlock is built into this kernel but not enabled (add landlock to lsm= at boot)"};
    return {0, std::string("Landlock is unavailable: ") + std::strerror(errno)};
}

std::optional<std::string> landlock_protect(const std::vector<std::filesystem::path>& read_only,
                                            const std::vector<std::filesystem::path>& writable) {
    LandlockSupport support = landlock_support();
    if (support.abi == 0) return support.why;
    const std::uint64_t rights = write_rights(support.abi);
    RulesetAttr attr{rights};
    UniqueFd ruleset(
        static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
    if (!ruleset) return std::string("cannot create a Landlock ruleset: ") + std::strerror(errno);
    // Down the chains `/` → each protected directory, granting everything beside them.
    bool root_protected = false;
    for (const auto& p : read_only)
        root_protected = root_protected || p == p.root_path();
    if (!root_protected)
        if (auto why = grant_around(ruleset.get(), "/", read_only, rights)) return why;
    for (const auto& w : writable) {
        UniqueFd fd(::open(w.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!fd) continue;
        if (!add_rule(ruleset.get(), fd.get(), rights))
            return "cannot add a Landlock rule for " + w.string() + ": " + std::strerror(errno);
    }
    // Required of an unprivileged process; it also keeps set-user-ID programs from escaping.
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return std::string("cannot set no_new_privs: ") + std::strerror(errno);
    if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0)
        return std::string("cannot enforce the Landlock ruleset: ") + std::strerror(errno);
    return std::nullopt;
}

}  // namespace envbox::env
