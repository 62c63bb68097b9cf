#include "envbox/env/sandbox.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "envbox/util/unique_fd.hpp"
#include "landlock.hpp"
#include "mounts.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

bool write_proc(const char* path, const std::string& text) {
    UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
    if (!fd) return false;
    return ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

// Every mount point at or below `dir`, each once.
std::vector<fs::path> mounts_at_or_below(const std::vector<MountEntry>& mounts,
                                         const fs::path& dir) {
    std::set<fs::path> seen;
    std::vector<fs::path> out;
    for (const auto& m : mounts)
        if (is_at_or_below(m.point, dir) && seen.insert(m.point).second) out.push_back(m.point);
    return out;
}

bool same_file(const fs::path& a, const fs::path& b) {
    struct stat sa {
    }, sb{};
    return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

// Other paths that reach the home's files: another mount of its filesystem (a bind mount, the
// same device mounted twice) that shows the home, or part of it, elsewhere. Writes through
// them would bypass a read-only home, so they are made read-only too.
std::vector<fs::path> aliases_of(const std::vector<MountEntry>& mounts, const fs::path& home) {
    auto join = [](const fs::path& a, const fs::path& rel) { return rel == "." ? a : a / rel; };
    // The mount the home is on (the deepest, the last of those stacked there) gives its device
    // and its path within the filesystem.
    const MountEntry* own = nullptr;
    for (const auto& m : mounts)
        if (is_at_or_below(home, m.point) &&
            (!own || m.point.native().size() >= own->point.native().size()))
            own = &m;
    if (!own) return {};
    const std::string dev = own->dev;
    const fs::path in_fs = join(own->root, home.lexically_relative(own->point));
    std::set<fs::path> out;
    for (const auto& m : mounts) {
        // Never the home's own mounts, nor one above it (it would make far more read-only).
        if (m.dev != dev || is_at_or_below(m.point, home) || is_at_or_below(home, m.point))
            continue;
        if (is_at_or_below(in_fs, m.root)) {
            fs::path alias = join(m.point, in_fs.lexically_relative(m.root));
            if (!is_at_or_below(alias, home) && same_file(alias, home)) out.insert(alias);
        } else if (is_at_or_below(m.root, in_fs)) {
            if (same_file(m.point, join(home, m.root.lexically_relative(in_fs))))
                out.insert(m.point);
        }
    }
    return {out.begin(), out.end()};
}

// unshare: a mount namespace; inside a user namespace when not root, and when root is refused
// one (no CAP_SYS_ADMIN) — a user namespace needs no capability.
std::optional<std::string> unshare_mount_namespace() {
    uid_t uid = ::geteuid();
    gid_t gid = ::getegid();
    std::string refused;
    if (uid == 0) {
        if (::unshare(CLONE_NEWNS) == 0) return std::nullopt;
        refused = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno) + "; ";
        if (errno != EPERM) return refused;
    }
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
        return refused + "unshare(CLONE_NEWUSER|CLONE_NEWNS): " + std::strerror(errno);
    // Stay ourselves inside the user namespace.
    write_proc("/proc/self/setgroups", "deny");
    if (!write_proc("/proc/self/uid_map",
                    std::to_string(uid) + " " + std::to_string(uid) + " 1\n") ||
        !write_proc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n"))
        return std::string("cannot map the user into its namespace: ") + std::strerror(errno);
    return std::nullopt;
}

std::optional<std::string> bind_over_itself(const fs::path& p) {
    if (::mount(p.c_str(), p.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        return "cannot bind-mount " + p.string() + ": " + std::strerror(errno);
    return std::nullopt;
}

// `read_only` (the protected trees, none beneath another) and every other mount that shows
// their files (aliases_of).
std::vector<fs::path> with_aliases(const std::vector<fs::path>& read_only) {
    const std::vector<MountEntry> mounts = read_mountinfo();
    std::set<fs::path> out(read_only.begin(), read_only.end());
    for (const auto& r : read_only)
        for (auto& a : aliases_of(mounts, r))
            out.insert(std::move(a));
    return {out.begin(), out.end()};
}

std::optional<std::string> enter_mount_namespace(const std::vector<fs::path>& read_only,
                                                 const std::vector<fs::path>& writable) {
    if (auto why = unshare_mount_namespace()) return why;
    // Mounts made here must not propagate back to the host.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return std::string("cannot make mounts private: ") + std::strerror(errno);
    // The writable directories are bound while their mounts are still writable: a bind mount
    // takes its source mount's flags.
    for (const auto& r : read_only)
        if (auto why = bind_over_itself(r)) return why;
    for (const auto& w : writable)
        if (auto why = bind_over_itself(w)) return why;
    std::vector<fs::path> protect = with_aliases(read_only);
    for (const auto& a : protect)
        if (std::find(read_only.begin(), read_only.end(), a) == read_only.end())
            if (auto why = bind_over_itself(a)) return why;
    const std::vector<MountEntry> mounts = read_mountinfo();
    for (const auto& dir : protect)
        for (const auto& m : mounts_at_or_below(mounts, dir)) {
            bool keep = false;
            for (const auto& w : writable)
                keep = keep || is_at_or_below(m, w);
            if (keep) continue;
            unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | mount_flags_of(m);
            if (::mount(nullptr, m.c_str(), nullptr, flags, nullptr) != 0)
                return "cannot make " + m.string() + " read-only: " + std::strerror(errno);
        }
    return std::nullopt;
}

// The trees to protect: `home` and those of `extra` the spec's contract keeps (canonical,
// existing, not `/`, holding neither the working directory nor $HOME), outermost first, none
// beneath another.
std::vector<fs::path> protected_trees(const fs::path& home, const std::vector<fs::path>& extra) {
    std::error_code ec;
    std::vector<fs::path> work;  // where the command must still be able to write
    if (fs::path cwd = fs::current_path(ec); !ec) work.push_back(fs::weakly_canonical(cwd, ec));
    if (const char* h = std::getenv("HOME"); h && *h) work.push_back(fs::weakly_canonical(h, ec));
    std::vector<fs::path> trees{home};
    for (const auto& d : extra) {
        fs::path c = fs::canonical(d, ec);
        if (ec || c == c.root_path()) continue;
        if (std::none_of(work.begin(), work.end(),
                         [&](const fs::path& w) { return is_at_or_below(w, c); }))
            trees.push_back(c);
    }
    std::sort(trees.begin(), trees.end(), [](const fs::path& a, const fs::path& b) {
        return a.native().size() < b.native().size();
    });
    std::vector<fs::path> out;
    for (const auto& t : trees)
        if (std::none_of(out.begin(), out.end(),
                         [&](const fs::path& o) { return is_at_or_below(t, o); }))
            out.push_back(t);
    return out;
}

}  // namespace

SandboxOutcome enter_sandbox(const SandboxSpec& spec) {
    SandboxOutcome out;
    std::error_code ec;
    fs::path home = fs::canonical(spec.read_only, ec);
    if (ec) {
        out.namespace_refused = out.landlock_refused =
            "cannot resolve " + spec.read_only.string() + ": " + ec.message();
        return out;
    }
    const std::vector<fs::path> read_only = protected_trees(home, spec.also_read_only);
    std::vector<fs::path> writable;
    for (const auto& w : spec.writable) {
        fs::path c = fs::canonical(w, ec);
        if (!ec && is_at_or_below(c, home)) writable.push_back(c);
    }
    auto why = enter_mount_namespace(read_only, writable);
    if (!why) {
        out.kind = SandboxKind::mount_namespace;
        return out;
    }
    out.namespace_refused = *why;
    if (auto no = landlock_protect(with_aliases(read_only), writable)) {
        out.landlock_refused = *no;
        return out;
    }
    out.kind = SandboxKind::landlock;
    return out;
}

SandboxOutcome probe_sandbox(const SandboxSpec& spec) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        return {SandboxKind::none, "cannot probe: pipe failed", "cannot probe"};
    UniqueFd from_child(fds[0]), to_parent(fds[1]);
    pid_t pid = ::fork();
    if (pid < 0) return {SandboxKind::none, "cannot probe: fork failed", "cannot probe"};
    if (pid == 0) {
        from_child.reset();
        SandboxOutcome o = enter_sandbox(spec);
        if (o.kind != SandboxKind::none) {
            // The proof: a new file directly in the protected directory must be refused.
            fs::path probe = spec.read_only / (".sandbox-probe-" + std::to_string(::getpid()));
            if (UniqueFd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
                fd) {
                fd.reset();
                ::unlink(probe.c_str());
                o.landlock_refused = "the sandbox was entered but a write into " +
                                     spec.read_only.string() + " still succeeded";
                o.kind = SandboxKind::none;
            }
        }
        std::string msg = std::to_string(static_cast<int>(o.kind)) + "\n" + o.namespace_refused +
                          "\n" + o.landlock_refused + "\n";
        ssize_t ignored = ::write(to_parent.get(), msg.data(), msg.size());
        (void)ignored;
        ::_exit(0);
    }
    to_parent.reset();
    std::string msg;
    char buf[512];
    ssize_t n;
    while ((n = ::read(from_child.get(), buf, sizeof buf)) > 0)
        msg.append(buf, static_cast<std::size_t>(n));
    from_child.reset();
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::istringstream in(msg);
    std::string kind, ns, ll;
    if (!std::getline(in, kind) || kind.empty())
        return {SandboxKind::none, "the probe died", "the probe died"};
    std::getline(in, ns);
    std::getline(in, ll);
    return {static_cast<SandboxKind>(std::stoi(kind)), ns, ll};
}

std::string describe(const SandboxOutcome& o) {
    switch (o.kind) {
        case SandboxKind::mount_namespace:
            return "read-only mount namespace";
        case SandboxKind::landlock:
            return "Landlock (no mount namespace: " + o.namespace_refused + ")";
        case SandboxKind::none:
            break;
    }
    return "none (no mount namespace: " + o.namespace_refused +
           "; no Landlock: " + o.landlock_refused + ")";
}

}  // namespace envbox::env
