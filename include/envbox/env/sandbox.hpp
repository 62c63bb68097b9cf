#pragma once
/// The sandbox of `envbox run` (foreign code, builds and `check`'s probe, is confined by
/// env/confine.hpp instead): nothing the command runs can write into ENVBOX_HOME (every
/// environment, the store, the caches) except the few directories a workload must write (its
/// compile caches), nor into the base interpreter's installation every environment runs on (a
/// base pip, `python -m ensurepip` of the base, a stray `open`).
///
/// First choice: a private mount namespace (inside a user namespace when not root, or when root
/// lacks CAP_SYS_ADMIN) in which the home is bind-mounted over itself and every mount at or below
/// it is remounted read-only, keeping each mount's own nosuid/nodev/noexec/atime flags (a user
/// namespace may not clear them, and root must not); the writable directories are bind-mounted
/// over themselves before that, so they stay writable. A write then fails with EROFS.
///
/// Where the kernel refuses namespaces (root without CAP_SYS_ADMIN under a seccomp filter, as in
/// containers; user namespaces disabled), Landlock (Linux 5.13+, no privilege needed) restricts
/// the process instead: see landlock.hpp for the rules and their one limit. A write then fails
/// with EACCES.

#include <filesystem>
#include <string>
#include <vector>

namespace envbox::env {

/// What the sandbox protects and what it leaves writable.
struct SandboxSpec {
    std::filesystem::path read_only;  ///< this directory and everything beneath it
    std::vector<std::filesystem::path>
        writable;  ///< existing directories beneath `read_only` kept writable
    /// Read-only too, with everything beneath: the base interpreter's installation
    /// (`Interpreter::installation`). One that does not exist, is `/`, or holds the working
    /// directory or $HOME is left out (a Python installed with `--prefix=$HOME` keeps the home
    /// writable; its lib/pythonX.Y and site-packages, also listed, are still protected).
    std::vector<std::filesystem::path> also_read_only = {};
};

/// How the process ended up confined.
enum class SandboxKind {
    mount_namespace,  ///< read-only mounts in a private mount namespace
    landlock,         ///< no namespaces: Landlock refuses writes beneath `read_only`
    none,             ///< neither works here: the command may write what its user may
};

struct SandboxOutcome {
    SandboxKind kind = SandboxKind::none;
    std::string namespace_refused;  ///< why no mount namespace (empty when kind is mount_namespace)
    std::string landlock_refused;   ///< why Landlock could not help (empty unless kind is none)
};

/// Confines this process (call right before exec; the process must be single-threaded, as
/// unshare(CLONE_NEWUSER) demands). Tries the mount namespace, then Landlock; either protects
/// `read_only` and `also_read_only` alike, or nothing. Paths are canonicalised first; writable
/// paths that do not exist are ignored. Never throws: what could
/// not be done is in the outcome. A process left with kind `none` may be in a new mount
/// namespace with part of the home read-only: treat it as unsandboxed.
SandboxOutcome enter_sandbox(const SandboxSpec& spec);

/// Whether the sandbox works here, tried for real in a forked child: it enters the sandbox and
/// checks that creating a file directly in `spec.read_only` is refused. The caller is not
/// changed. For `envbox doctor`; call it while the process is single-threaded.
SandboxOutcome probe_sandbox(const SandboxSpec& spec);

/// One line for the user: "read-only mount namespace", "Landlock (no mount namespace: …)",
/// "none (no mount namespace: …; no Landlock: …)".
std::string describe(const SandboxOutcome& outcome);

}  // namespace envbox::env
