// `run` and `shell` as root: the capabilities a workload loses (env/confine.hpp says which and
// why; docs/SECURITY.md, "run and shell as root").
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "envbox/env/confine.hpp"
#include "envbox/util/error.hpp"

namespace envbox::env {

namespace {

// The capabilities a root workload loses (confine.hpp says why each).
constexpr std::pair<const char*, int> kWorkloadDropped[] = {
    {"sys_admin", CAP_SYS_ADMIN},
    {"sys_ptrace", CAP_SYS_PTRACE},
    {"dac_read_search", CAP_DAC_READ_SEARCH},
    {"mknod", CAP_MKNOD},
    {"sys_module", CAP_SYS_MODULE},
    {"sys_rawio", CAP_SYS_RAWIO},
    {"sys_chroot", CAP_SYS_CHROOT},
    {"sys_boot", CAP_SYS_BOOT},
    {"sys_time", CAP_SYS_TIME},
    {"linux_immutable", CAP_LINUX_IMMUTABLE},
    {"setpcap", CAP_SETPCAP},
    {"setfcap", CAP_SETFCAP},
    {"mac_admin", CAP_MAC_ADMIN},
    {"mac_override", CAP_MAC_OVERRIDE},
    {"audit_control", CAP_AUDIT_CONTROL},
    {"audit_read", 37},
    {"syslog", CAP_SYSLOG},
    {"bpf", 39},
    {"checkpoint_restore", 40},
    {"sys_pacct", CAP_SYS_PACCT},
    {"sys_tty_config", CAP_SYS_TTY_CONFIG},
};

}  // namespace

int capability_number(const std::string& name) {
    std::string n;
    for (char c : name)
        n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n.starts_with("cap_")) n.erase(0, 4);
    for (const auto& [known, number] : kWorkloadDropped)
        if (n == known) return number;
    return -1;
}

std::optional<std::string> drop_workload_capabilities(const std::vector<std::string>& keep) {
    std::vector<int> kept;
    for (const auto& k : keep) {
        const int number = capability_number(k);
        if (number < 0)
            throw Error(
                ErrorCode::usage,
                "--keep-cap " + k +
                    ": not one of the capabilities a root workload loses (docs/SECURITY.md)");
        kept.push_back(number);
    }
    // Every sandboxed workload: no exec gains a privilege (a file capability would, in the user
    // namespace a user's sandbox is made in, and its mounts are not locked there).
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return std::string("no_new_privs: ") + std::strerror(errno);
    if (::geteuid() != 0) return std::nullopt;
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (::syscall(SYS_capget, &header, data) != 0)
        return std::string("capget: ") + std::strerror(errno);
    for (const auto& [name, cap] : kWorkloadDropped) {
        if (std::find(kept.begin(), kept.end(), cap) != kept.end()) continue;
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
            return "cannot drop CAP_" + std::string(name) + ": " + std::strerror(errno);
        const auto bit = 1u << (cap % 32);
        data[cap / 32].effective &= ~bit;
        data[cap / 32].permitted &= ~bit;
        data[cap / 32].inheritable &= ~bit;
    }
    (void)::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (::syscall(SYS_capset, &header, data) != 0)
        return std::string("capset: ") + std::strerror(errno);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return std::string("no_new_privs: ") + std::strerror(errno);
    return std::nullopt;
}

}  // namespace envbox::env
