#include "envbox/env/sandbox.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace envbox::env {
namespace {

bool write_proc(const char* path, const std::string& text) {
    int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
}

}  // namespace

std::optional<std::string> enter_read_only_sandbox(const std::vector<std::filesystem::path>& read_only) {
    uid_t uid = ::geteuid();
    gid_t gid = ::getegid();
    int flags = CLONE_NEWNS | (uid == 0 ? 0 : CLONE_NEWUSER);
    if (::unshare(flags) != 0)
        return std::string("cannot create a ") + (uid == 0 ? "mount" : "user and mount") +
               " namespace: " + std::strerror(errno);
    if (uid != 0) {
        // Stay ourselves inside the user namespace.
        write_proc("/proc/self/setgroups", "deny");
        if (!write_proc("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n") ||
            !write_proc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n"))
            return std::string("cannot map the user into its namespace: ") + std::strerror(errno);
    }
    // Mounts made here must not propagate back to the host.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return std::string("cannot make mounts private: ") + std::strerror(errno);
    for (const auto& p : read_only) {
        std::error_code ec;
        auto real = std::filesystem::canonical(p, ec);
        if (ec) continue;
        if (::mount(real.c_str(), real.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
            return "cannot bind-mount " + real.string() + ": " + std::strerror(errno);
        if (::mount(nullptr, real.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0)
            return "cannot make " + real.string() + " read-only: " + std::strerror(errno);
    }
    return std::nullopt;
}

}  // namespace envbox::env
