#pragma once
/// Building a wheel from a source distribution (PEP 517), as envbox's own frontend: the sdist
/// is unpacked as hostile (install/sdist.hpp), its `[build-system]` read (lock/build_system.hpp),
/// and the backend's `build_wheel` hook run by a small Python program of envbox's
/// (src/install/pep517_frontend.py) confined as all foreign code is (env/confine.hpp): every
/// mount read-only but the build's own folder, no capabilities, no network and no UNIX socket,
/// its own pid namespace (nothing it starts outlives it), a private /tmp, TMPDIR and HOME,
/// `python -I` (no user site-packages, no PYTHON* variables), the build requirements' import
/// roots first on sys.path, and a bounded time. What it prints goes to a log, whose tail an
/// error shows. The wheel it names is checked to be a wheel file of the build's output folder.

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "envbox/lock/build_system.hpp"

namespace envbox::install {

struct BuildRequest {
    std::filesystem::path sdist;  ///< the archive (`.tar.gz` or `.zip`)
    /// Or a local tree (install/local.hpp) to build instead: copied into `work` first (what
    /// `tree_digest` reads, `tree_skip` left out), or with `editable` built in place by the
    /// backend's PEP 660 `build_editable`, the tree read-only to it.
    std::filesystem::path tree, tree_skip;
    bool editable = false;
    std::string sdist_name;        ///< its file name as the lock gives it (default: `sdist`'s)
    std::filesystem::path work;    ///< a folder for this build, made here (it must not exist)
    std::filesystem::path python;  ///< the interpreter the backend runs on
    /// The build requirements' import roots (an environment's site-packages), first on sys.path.
    std::vector<std::filesystem::path> build_path;
    /// Set in the backend's environment (`[build.PKG].variables`), after envbox's own.
    std::map<std::string, std::string> variables;
    /// Read-only while the backend runs, but for `work` (the envbox home).
    std::filesystem::path read_only;
    std::chrono::seconds timeout{3600};
};

struct BuiltWheel {
    std::filesystem::path wheel;  ///< in `work/out`
    std::filesystem::path log;    ///< `work/build.log`: what the backend printed
    lock::BuildSystem build_system;
    double seconds = 0;
};

/// The PATH a backend runs with, unless `variables` set one.
inline constexpr const char* kBuildPath = "/usr/local/bin:/usr/bin:/bin";

/// The compilers a build given `variables` would find, each "TOOL PATH VERSION" (the first line
/// of `--version`; nvcc's "release" line), sorted: `cc` and `c++` (or what `CC`/`CXX` name) on
/// the build's PATH, and `nvcc` in `CUDA_HOME`/bin, else on that PATH, else in
/// /usr/local/cuda/bin (where torch's extension builder looks). Part of a build's key, so a
/// compiler changed builds again. Each program is asked once per process, inside the build's
/// sandbox (`home` read-only, no network, 30 s at most): the lock's variables choose it.
std::vector<std::string> toolchain(const std::map<std::string, std::string>& variables,
                                   const std::filesystem::path& home);

/// Unpacks, reads the build system and runs the backend. Throws `Error` naming the sdist for an
/// archive or `[build-system]` that is refused, and (generic) for a backend that fails, is
/// killed at the timeout, or names no wheel file it made: with the log's path and its last
/// lines. `work` stays for the caller to remove (the log with it).
BuiltWheel build_wheel(const BuildRequest& request);

}  // namespace envbox::install
