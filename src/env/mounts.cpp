#include "mounts.hpp"

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

// A mount point from /proc/self/mountinfo: spaces, tabs, newlines and backslashes come as \ooo.
std::string unescape_mount_point(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        bool octal = s[i] == '\\' && i + 3 < s.size();
        for (std::size_t k = 1; octal && k <= 3; ++k)
            octal = s[i + k] >= '0' && s[i + k] <= '7';
        if (octal) {
            out +=
                static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

}  // namespace

// The mounts of this mount namespace, in mount order (a later one at a path covers an earlier).
std::vector<MountEntry> read_mountinfo() {
    std::ifstream in("/proc/self/mountinfo");
    std::vector<MountEntry> out;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string id, parent, dev, root, point;
        if (fields >> id >> parent >> dev >> root >> point)
            out.push_back({dev, unescape_mount_point(root), unescape_mount_point(point)});
    }
    return out;
}

// The per-mount flags a read-only bind remount must repeat: a user namespace may not clear a
// locked nosuid/nodev/noexec/atime flag (EPERM), and root would silently clear them.
unsigned long mount_flags_of(const fs::path& p) {
    struct statvfs sv {};
    if (::statvfs(p.c_str(), &sv) != 0) return 0;
    unsigned long flags = 0;
    const std::pair<unsigned long, unsigned long> map[] = {
        {ST_NOSUID, MS_NOSUID},   {ST_NODEV, MS_NODEV},           {ST_NOEXEC, MS_NOEXEC},
        {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME}};
    for (const auto& [st, ms] : map)
        if (sv.f_flag & st) flags |= ms;
    return flags;
}

}  // namespace envbox::env
