#pragma once
/// Finding and probing Python interpreters.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envbox/pep/marker.hpp"

namespace envbox::env {

/// What a probe of one interpreter found.
struct Interpreter {
    std::filesystem::path executable;  ///< resolved path of the interpreter binary
    std::string implementation;        ///< "cpython"
    int major = 0, minor = 0;
    std::string full_version;  ///< "3.11.2"
    std::string abiflags;      ///< "" or "t"
    std::string glibc;         ///< "2.36", empty when not glibc
    std::string cache_tag;     ///< sys.implementation.cache_tag ("cpython-311"; empty: none)
    std::string magic;         ///< importlib.util.MAGIC_NUMBER in hex ("a70d0d0a")
    /// venv scheme paths relative to the environment root: purelib, platlib, scripts, include,
    /// data ("lib/python3.11/site-packages", "bin", …).
    std::map<std::string, std::string> scheme;
    pep::MarkerEnvironment markers;  ///< the interpreter's own marker environment
    /// Its installation, which every environment built on it runs on: sys.base_prefix,
    /// sys.base_exec_prefix, the stdlib and site-packages folders (`envbox run` makes them
    /// read-only; env/sandbox.hpp).
    std::vector<std::filesystem::path> installation;

    bool free_threaded() const { return abiflags.find('t') != std::string::npos; }
    std::string version_xy() const { return std::to_string(major) + "." + std::to_string(minor); }
};

/// Probes the interpreter at `path` (running it once with `-I -S`), using and refreshing the
/// cache under `cache_dir` keyed by the resolved path, size and mtime. Throws `Error` when the
/// program cannot be run or is not a CPython 3 interpreter.
Interpreter probe_interpreter(const std::filesystem::path& path,
                              const std::filesystem::path& cache_dir);

/// Where interpreters are looked for: what the cli read from the environment (empty: unset).
struct InterpreterSearch {
    std::string python;                 ///< ENVBOX_PYTHON: the one candidate, when set
    std::string path;                   ///< PATH
    std::string home;                   ///< HOME
    std::string pyenv_root;             ///< PYENV_ROOT
    std::string uv_python_install_dir;  ///< UV_PYTHON_INSTALL_DIR
};

/// Places searched, in order: `ENVBOX_PYTHON` (alone, when set); `python3.X` then `python3`
/// on PATH; /usr/bin and /usr/local/bin; pyenv (`$PYENV_ROOT` or ~/.pyenv) and uv
/// (`$UV_PYTHON_INSTALL_DIR` or ~/.local/share/uv/python) install folders.
std::vector<std::filesystem::path> interpreter_candidates(int major, int minor,
                                                          const InterpreterSearch& search);

/// The first candidate whose probe reports `major.minor` (and the free-threaded build only
/// when asked). Throws `Error` (invalid_input, exit 3) listing what was found otherwise.
Interpreter find_interpreter(int major, int minor, bool free_threaded,
                             const std::filesystem::path& cache_dir,
                             const InterpreterSearch& search);

/// The interpreter used when nothing names a version (a bare `--lock` without a manifest):
/// `ENVBOX_PYTHON`, else the first `python3` found on PATH, /usr/bin or /usr/local/bin.
Interpreter default_interpreter(const std::filesystem::path& cache_dir,
                                const InterpreterSearch& search);

}  // namespace envbox::env
