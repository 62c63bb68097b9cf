#pragma once
// The mount table as the sandboxes read it (/proc/self/mountinfo), and the flags a read-only
// bind remount must repeat.

#include <filesystem>
#include <string>
#include <vector>

namespace envbox::env {

struct MountEntry {
    std::string dev;              // major:minor of the filesystem
    std::filesystem::path root;   // the mounted directory's path within its filesystem
    std::filesystem::path point;  // where it is mounted
};

/// The mounts of this mount namespace, in mount order (a later one at a path covers an earlier).
std::vector<MountEntry> read_mountinfo();

/// The per-mount flags a read-only bind remount must repeat: a user namespace may not clear a
/// locked nosuid/nodev/noexec/atime flag (EPERM), and root would silently clear them.
unsigned long mount_flags_of(const std::filesystem::path& p);

}  // namespace envbox::env
