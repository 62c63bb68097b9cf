#include "envbox/env/confine.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "envbox/util/error.hpp"
#include "envbox/util/process.hpp"
#include "envbox/util/unique_fd.hpp"
#include "landlock.hpp"
#include "mounts.hpp"

// System calls newer than some C libraries' headers (the numbers are shared by x86_64 and
// aarch64 from 424 on).
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#define SYS_move_mount 429
#define SYS_fsopen 430
#define SYS_fsconfig 431
#define SYS_fsmount 432
#define SYS_fspick 433
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

// What the child prepares in this process, before the fork: C strings and paths only.
struct Prepared {
    std::vector<char*> argv, env;
    std::vector<fs::path> writable, keep, devices;
    bool from_main_thread = false;
    bool unix_sockets = false;
};

// The child's way to say why it stopped before exec: the message on `report`, then exit 125.
[[noreturn]] void fail(int report, const std::string& what, int err) {
    const std::string text = what + (err ? std::string(": ") + std::strerror(err) : "");
    (void)!::write(report, text.data(), text.size());
    ::_exit(125);
}

bool write_text(const char* path, const std::string& text) {
    UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
    return fd && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

void bind(int report, const fs::path& from, const fs::path& to) {
    if (::mount(from.c_str(), to.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        fail(report, "cannot bind-mount " + from.string() + " on " + to.string(), errno);
}

void read_only(int report, const fs::path& point, unsigned long extra = 0) {
    const unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | mount_flags_of(point) | extra;
    if (::mount(nullptr, point.c_str(), nullptr, flags, nullptr) == 0) return;
    const int err = errno;
    struct statvfs sv {};
    if (::statvfs(point.c_str(), &sv) == 0 && (sv.f_flag & ST_RDONLY)) return;
    struct stat st {};
    if (::stat(point.c_str(), &st) != 0) return;  // hidden beneath another mount: unreachable
    fail(report, "cannot make " + point.string() + " read-only", err);
}

void tmpfs(int report, const fs::path& at, const char* options) {
    if (::mount("tmpfs", at.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options) != 0)
        fail(report, "cannot mount a tmpfs on " + at.string(), errno);
}

// A private `dir` (/tmp, /run): a tmpfs over it, where what the spec needs beneath the old one
// (the home, the writable folders) is bound back at its own path, reached through descriptors
// opened before it was covered. Nothing else of it is seen: no socket file there is reachable.
void private_dir(int report, const Prepared& p, const fs::path& dir, const char* options) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;  // absent, or a link
    std::vector<std::pair<fs::path, UniqueFd>> under;
    for (const auto* list : {&p.keep, &p.writable})
        for (const auto& d : *list)
            if (is_at_or_below(d, dir) && d != dir) {
                UniqueFd fd(::open(d.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
                if (!fd) fail(report, "cannot open " + d.string(), errno);
                under.emplace_back(d, std::move(fd));
            }
    std::stable_sort(under.begin(), under.end(), [](const auto& a, const auto& b) {
        return a.first.native().size() < b.first.native().size();
    });
    tmpfs(report, dir, options);
    for (const auto& [d, fd] : under) {
        std::error_code ec;
        fs::create_directories(d, ec);
        bind(report, "/proc/self/fd/" + std::to_string(fd.get()), d);
    }
}

// A /dev of its own: a tmpfs holding binds of the harmless nodes (and the GPU's), the usual
// links and a private /dev/shm, built beneath the new /tmp and moved over /dev.
void private_dev(int report, const Prepared& p) {
    const fs::path stage = "/tmp/.envbox-dev";
    std::error_code ec;
    fs::create_directory(stage, ec);
    tmpfs(report, stage, "mode=0755,size=1m");
    for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
        const fs::path host = fs::path("/dev") / node;
        if (::access(host.c_str(), F_OK) != 0) continue;
        UniqueFd made(::open((stage / node).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666));
        bind(report, host, stage / node);
    }
    for (const auto& d : p.devices) {
        const fs::path to = stage / d.lexically_relative("/dev");
        if (fs::is_directory(d, ec)) {
            fs::create_directories(to, ec);
        } else {
            fs::create_directories(to.parent_path(), ec);
            UniqueFd made(::open(to.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666));
        }
        bind(report, d, to);
    }
    for (const auto& [name, target] : {std::pair<const char*, const char*>{"fd", "/proc/self/fd"},
                                       {"stdin", "/proc/self/fd/0"},
                                       {"stdout", "/proc/self/fd/1"},
                                       {"stderr", "/proc/self/fd/2"}})
        (void)!::symlink(target, (stage / name).c_str());
    fs::create_directory(stage / "shm", ec);
    tmpfs(report, stage / "shm", "mode=1777");
    if (::mount(stage.c_str(), "/dev", nullptr, MS_MOVE, nullptr) != 0)
        fail(report, "cannot move the private /dev in place", errno);
    ::rmdir(stage.c_str());
}

// Every mount read-only but the writable folders, /tmp's and /dev/shm's tmpfs and /proc.
void seal(int report, const Prepared& p) {
    for (const auto& m : read_mountinfo()) {
        const fs::path& point = m.point;
        if (is_at_or_below(point, "/proc") || point == "/tmp" || point == "/dev/shm") continue;
        if (std::any_of(p.writable.begin(), p.writable.end(),
                        [&](const fs::path& w) { return is_at_or_below(point, w); }))
            continue;
        read_only(report, point);
    }
}

// A fresh /proc of the new pid namespace; its kernel tunables read-only.
void private_proc(int report) {
    // Read-only as a whole: uid 0 without capabilities still owns /proc's root files (fs, acpi,
    // driver tunables), and nothing confined needs to write there.
    if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr) !=
        0)
        fail(report, "cannot mount a /proc of its own", errno);
    for (const char* tunable : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}) {
        if (::access(tunable, F_OK) != 0) continue;
        bind(report, tunable, tunable);
        read_only(report, tunable, MS_NOSUID | MS_NODEV | MS_NOEXEC);
    }
}

// The filter: the native ABI only; no new namespaces, mounts, keyrings, bpf, perf, io_uring;
// no UNIX sockets unless `unix_sockets`.
void install_filter(int report, bool unix_sockets) {
#if defined(__x86_64__)
    constexpr std::uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    constexpr std::uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "envbox's seccomp filter knows x86_64 and aarch64"
#endif
    constexpr std::uint32_t kNamespaces = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID |
                                          CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                                          CLONE_NEWCGROUP;
    constexpr auto kNr = offsetof(seccomp_data, nr), kArchAt = offsetof(seccomp_data, arch),
                   kArg0 = offsetof(seccomp_data, args);  // the low half: little-endian
    const auto errno_of = [](int e) { return SECCOMP_RET_ERRNO | static_cast<std::uint32_t>(e); };
    std::vector<sock_filter> f = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArchAt),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr),
#if defined(__x86_64__)
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),  // x32
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#endif
    };
    const auto refuse = [&f](long nr, std::uint32_t action) {
        f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 1));
        f.push_back(BPF_STMT(BPF_RET | BPF_K, action));
    };
    for (long nr :
         {SYS_unshare, SYS_setns, SYS_mount, SYS_umount2, SYS_pivot_root, SYS_open_tree,
          SYS_move_mount, SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick, SYS_mount_setattr,
          SYS_keyctl, SYS_add_key, SYS_request_key, SYS_bpf, SYS_perf_event_open, SYS_userfaultfd})
        refuse(nr, errno_of(EPERM));
    refuse(SYS_io_uring_setup, errno_of(ENOSYS));
    refuse(SYS_clone3, errno_of(ENOSYS));  // its flags are out of reach: libc falls back to clone
    // clone with a namespace flag; socket(AF_UNIX, …).
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4));
    f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0));
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, kNamespaces, 0, 1));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, errno_of(EPERM)));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    // socket() of a refused family: AF_VSOCK always (the VM's host, outside any network
    // namespace), AF_UNIX unless allowed.
    std::vector<std::uint32_t> families = {AF_VSOCK};
    if (!unix_sockets) families.push_back(AF_UNIX);
    const auto n = static_cast<std::uint8_t>(families.size());
    f.push_back(
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, static_cast<std::uint8_t>(n + 3)));
    f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0));
    for (std::uint8_t k = 0; k < n; ++k)  // a match skips the other tests and the ALLOW
        f.push_back(
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, families[k], static_cast<std::uint8_t>(n - k), 0));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, errno_of(EACCES)));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
        fail(report, "cannot install the seccomp filter", errno);
}

// No capability now or after exec, whatever the uid: every set emptied, the securebits locked.
void drop_capabilities(int report) {
    for (int cap = 0; cap <= 63; ++cap)
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
            fail(report, "cannot drop capability " + std::to_string(cap), errno);
    (void)::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                               SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                               SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0)
        fail(report, "cannot lock the securebits", errno);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (::syscall(SYS_capset, &header, data) != 0)
        fail(report, "cannot clear the capability sets", errno);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        fail(report, "cannot set no_new_privs", errno);
}

// stdin, stdout, stderr and the channel as fds 0–3, everything else closed.
void arrange_fds(int report, const ConfineSpec& s) {
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    int from[4] = {s.stdin_fd, s.stdout_fd, s.stderr_fd, s.channel_fd};
    for (int i = 0; i < 4; ++i) {
        if (from[i] < 0) from[i] = i < 3 ? null : -1;
        if (from[i] >= 0) from[i] = ::fcntl(from[i], F_DUPFD_CLOEXEC, 64);  // out of 0–3's way
        if (from[i] < 0 && (i < 3 || s.channel_fd >= 0))
            fail(report, "cannot arrange the descriptors", errno);
    }
    for (int i = 0; i < 4; ++i)
        if (from[i] >= 0 && ::dup2(from[i], i) != i)
            fail(report, "cannot arrange the descriptors", errno);
    const unsigned first = s.channel_fd >= 0 ? 4 : 3;
    if (::syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
        for (int fd = static_cast<int>(first); fd < 4096; ++fd)
            if (fd != report) ::close(fd);
}

// The program: descriptors, working folder, no capabilities, the filter, exec.
[[noreturn]] void program(int report, const ConfineSpec& s, const Prepared& p) {
    // A session of its own: no controlling terminal, so no TIOCSTI into the user's shell, no
    // foreground group to read the keyboard (killing the init's group still ends it).
    if (::setsid() < 0) fail(report, "setsid", errno);
    arrange_fds(report, s);
    if (::chdir(s.workdir.empty() ? "/" : s.workdir.c_str()) != 0)
        fail(report, "cannot enter " + s.workdir.string(), errno);
    drop_capabilities(report);
    install_filter(report, p.unix_sockets);
    ::execve(p.argv[0], p.argv.data(), p.env.data());
    fail(report, std::string("cannot run ") + p.argv[0], errno);
}

// pid 1 of the new pid namespace: the mounts, then the program as its child; it reaps every
// orphan and exits with the program's status, and the kernel then ends all that is left.
[[noreturn]] void init(int report, const ConfineSpec& s, const Prepared& p) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        fail(report, "cannot make mounts private", errno);
    private_dir(report, p, "/tmp", "mode=1777");
    // Where daemons keep their sockets (docker, containerd, systemd, D-Bus, the user's runtime
    // folder, nvidia-persistenced); /var/run is a link to it on current systems.
    private_dir(report, p, "/run", "mode=0755");
    private_dir(report, p, "/var/run", "mode=0755");
    for (const auto& w : p.writable)
        bind(report, w, w);
    private_dev(report, p);
    seal(report, p);
    private_proc(report);
    const pid_t child = ::fork();
    if (child < 0) fail(report, "fork", errno);
    if (child == 0) program(report, s, p);
    ::close(report);
    int status = 0, result = 0;
    for (;;) {
        const pid_t done = ::waitpid(-1, &status, 0);
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) ::_exit(125);  // never a success that was not seen
        if (done == child) {
            result = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
    }
    ::_exit(result);
}

// The outer process: a group of its own, the namespaces, the maps; waits for the init.
[[noreturn]] void outer(int report, const ConfineSpec& s, const Prepared& p, pid_t envbox) {
    ::setpgid(0, 0);
    // Nothing of envbox's signal handling (its SIGINT/SIGTERM handler, an ignored SIGCHLD)
    // reaches the init or the program.
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (p.from_main_thread) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != envbox) ::_exit(125);
    }
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    const int spaces =
        CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
    if (::unshare(spaces) != 0) {
        const int err = errno;
        fail(report,
             std::string("unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWNET|"
                         "CLONE_NEWIPC|CLONE_NEWUTS): ") +
                 std::strerror(err) +
                 (err == EPERM || err == ENOSPC || err == EINVAL
                      ? "; user namespaces are refused here (a container's seccomp profile, "
                        "user.max_user_namespaces = 0, or a kernel setting): allow them for the "
                        "process that runs envbox"
                      : ""),
             0);
    }
    write_text("/proc/self/setgroups", "deny");
    if (!write_text("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !write_text("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1"))
        fail(report, "cannot map the user into its namespace", errno);
    const pid_t child = ::fork();
    if (child < 0) fail(report, "fork", errno);
    if (child == 0) init(report, s, p);
    ::close(report);
    int status = 0;
    for (;;) {
        if (::waitpid(child, &status, 0) == child) break;
        if (errno != EINTR) ::_exit(125);
    }
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

fs::path canonical_or_self(const fs::path& p) {
    std::error_code ec;
    fs::path c = fs::canonical(p, ec);
    return ec ? p : c;
}

}  // namespace

std::vector<fs::path> gpu_device_nodes() {
    std::vector<fs::path> out;
    std::error_code ec;
    // CUDA's unified-memory node is made on first use by the driver's setuid helper, which no
    // confined process can run (no_new_privs, no capabilities): on a node where nothing has
    // used CUDA yet, make it first, as libcuda would, so that the bind below finds it.
    if (fs::exists("/dev/nvidiactl", ec) && !fs::exists("/dev/nvidia-uvm", ec))
        for (const char* helper : {"/usr/bin/nvidia-modprobe", "/usr/sbin/nvidia-modprobe"})
            if (::access(helper, X_OK) == 0) {
                try {
                    (void)run_capture({helper, "-u", "-c=0"});
                } catch (const Error&) {  // no helper that runs: the probe says CUDA is missing
                }
                break;
            }
    for (fs::directory_iterator it("/dev", ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.starts_with("nvidia") || name == "dri") out.push_back(it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

pid_t spawn_confined(const ConfineSpec& spec) {
    if (spec.argv.empty() || spec.argv[0].find('/') == std::string::npos)
        throw Error(ErrorCode::generic, "spawn_confined: argv[0] must be a path");
    std::vector<std::string> argv = spec.argv, env = spec.env;
    Prepared p;
    for (auto& a : argv)
        p.argv.push_back(a.data());
    p.argv.push_back(nullptr);
    for (auto& e : env)
        p.env.push_back(e.data());
    p.env.push_back(nullptr);
    for (const auto& w : spec.writable)
        p.writable.push_back(canonical_or_self(w));
    for (const auto& k : spec.keep)
        p.keep.push_back(canonical_or_self(k));
    // The program's own installation (`PREFIX/bin/PROGRAM`), when it lives beneath /tmp.
    p.keep.push_back(canonical_or_self(spec.argv[0]).parent_path().parent_path());
    if (spec.gpu) p.devices = gpu_device_nodes();
    p.unix_sockets = spec.unix_sockets;
    p.from_main_thread = ::gettid() == ::getpid();
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw Error(ErrorCode::generic, std::string("pipe: ") + std::strerror(errno));
    UniqueFd said(fds[0]), report(fds[1]);
    const pid_t envbox = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw Error(ErrorCode::generic, std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        try {  // never unwinds into envbox's own code in the child
            outer(report.get(), spec, p, envbox);
        } catch (...) {
            fail(report.get(), "the sandbox for foreign code failed while it was set up", 0);
        }
    }
    ::setpgid(pid, pid);
    report.reset();
    std::string why;
    char buf[1024];
    for (ssize_t n; (n = ::read(said.get(), buf, sizeof buf)) != 0 && why.size() < 4096;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        why.append(buf, static_cast<std::size_t>(n));
    }
    if (why.empty()) return pid;
    ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw Error(ErrorCode::generic,
                "the sandbox for foreign code cannot be set up here (" + why +
                    "); envbox never runs a build or a probe unconfined (docs/SECURITY.md)");
}

}  // namespace envbox::env
