#pragma once
/// Foreign code's confinement: what envbox runs that an sdist or a wheel supplied (a build
/// backend, a compiler a lock's variables name asked for its version, `check`'s probe) runs in
/// one shape, the same as root and as an ordinary user (docs/SECURITY.md, "Foreign code"):
///
/// - new user, mount, pid, network, IPC and UTS namespaces, the caller mapped to itself;
/// - every mount read-only (bind-remounted, each mount's nosuid/nodev/noexec kept) but the
///   folders the spec names writable; a private tmpfs `/tmp` (what the home and the writable
///   folders need beneath the old one is bound back in), `/run` and `/dev/shm`; a `/dev` of its own
///   holding only null, zero, full, random, urandom, tty (and the GPU's nodes when asked); a
///   fresh `/proc` of its own pid namespace, its `sys`, `sysrq-trigger`, `irq` and `bus`
///   read-only; no network interface up;
/// - the program keeps no capability and cannot regain one: the bounding, ambient, inheritable,
///   permitted and effective sets emptied, the securebits locked, `PR_SET_NO_NEW_PRIVS`; a
///   seccomp filter refuses new namespaces, mounts, the kernel keyrings, bpf, perf events,
///   io_uring, foreign system call ABIs, and (unless `unix_sockets`) UNIX sockets
///   (`socket(AF_UNIX)`: an agent's or a daemon's socket file is not connectable; `socketpair`
///   works);
/// - it runs under an init of envbox's (pid 1 of its pid namespace): when the program ends, or
///   the init is killed (time limit, Ctrl-C through the interrupt group, envbox's own death),
///   the kernel kills every process it started, and the init has exited only once they are gone.
///
/// Where the kernel refuses any part, nothing runs: `spawn_confined` throws naming what was
/// refused. There is no fallback to running unconfined.

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace envbox::env {

struct ConfineSpec {
    std::vector<std::string> argv;  ///< argv[0] a path
    std::vector<std::string> env;   ///< exactly its environment, each "KEY=VALUE"
    std::filesystem::path workdir;  ///< its working folder ("/" when empty)
    /// Existing folders it may write, with everything beneath; every other mount is read-only.
    std::vector<std::filesystem::path> writable;
    /// Folders beneath /tmp it must still see (read-only), besides `writable`: the envbox home
    /// and the interpreter's installation when they live there.
    std::vector<std::filesystem::path> keep;
    bool gpu = false;  ///< the GPU's device nodes (/dev/nvidia*, /dev/dri) in its /dev
    /// UNIX sockets may be made (`check`'s probe: CUDA's driver makes one at initialisation and
    /// fails with error 304 when it cannot). The private /tmp and /run still hide the sockets
    /// daemons keep there; one elsewhere (in $HOME) is then reachable.
    bool unix_sockets = false;
    int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;  ///< -1: /dev/null
    int channel_fd = -1;                                ///< given to the program as fd 3 (-1: none)
};

/// Starts `spec.argv` confined. Returns the pid of the confinement's outer process, the leader
/// of a process group of its own: its exit status is the program's (128 + signal when killed),
/// and killing its group (SIGKILL) ends the program and everything it started. Throws `Error`
/// (generic) naming what the kernel refused, before anything of `spec.argv` ran.
pid_t spawn_confined(const ConfineSpec& spec);

/// `run` and `shell` as root: the workload keeps its uid and what GPU jobs use (file access over
/// the user's data, NCCL's and RDMA's locked memory and priorities, the network, signals,
/// setuid for launchers) but not the capabilities that could undo its read-only mounts or reach
/// around them: CAP_SYS_ADMIN (remounts, new mount namespaces, setns), CAP_SYS_PTRACE (another
/// process's /proc/PID/root), CAP_DAC_READ_SEARCH (open_by_handle_at), CAP_MKNOD (a disk's
/// node in a writable folder), CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_CHROOT, CAP_SYS_BOOT,
/// CAP_SYS_TIME, CAP_LINUX_IMMUTABLE, CAP_SETPCAP, CAP_SETFCAP, CAP_MAC_*, CAP_AUDIT_CONTROL,
/// CAP_AUDIT_READ, CAP_SYSLOG, CAP_BPF, CAP_CHECKPOINT_RESTORE, CAP_SYS_PACCT,
/// CAP_SYS_TTY_CONFIG. They leave the bounding set too (no exec regains them) and
/// no_new_privs is set. `keep` names capabilities of that list to keep all the same (`run
/// --keep-cap`, "sys_admin" or "CAP_SYS_ADMIN"); an unknown name is a usage error. Nothing for
/// a process that is not root (its capabilities are gone at exec already). Returns why it could
/// not, or nullopt.
std::optional<std::string> drop_workload_capabilities(const std::vector<std::string>& keep);

/// The capability named `name` ("sys_admin", "CAP_SYS_ADMIN", any case), or -1.
int capability_number(const std::string& name);

/// The device nodes `gpu` adds, as found on this machine (for messages and tests); where the
/// NVIDIA driver is loaded but CUDA's unified-memory node not made yet (a fresh node), the
/// driver's own helper (`nvidia-modprobe -u -c=0`) makes it first, as libcuda would.
std::vector<std::filesystem::path> gpu_device_nodes();

}  // namespace envbox::env
