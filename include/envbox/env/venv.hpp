#pragma once
/// PEP 405 virtual environments, created directly (no `python -m venv`).

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "envbox/env/generation.hpp"
#include "envbox/env/interpreter.hpp"

namespace envbox::env {

/// Where things go in an environment (paths absolute).
struct VenvLayout {
    std::filesystem::path root;
    std::filesystem::path purelib, platlib, scripts, data;
    std::filesystem::path headers_base;  ///< include/site/pythonX.Y (pip's venv layout)
    std::filesystem::path python;        ///< root/bin/python, the interpreter scripts name

    static VenvLayout of(const Interpreter& interpreter, const std::filesystem::path& root);
};

/// One entry of the venv skeleton: a file with content, or a symlink.
struct VenvEntry {
    std::string rel;             ///< relative to the environment root
    std::string content;         ///< file content (when not a symlink)
    std::string symlink_target;  ///< non-empty for a symlink
    mode_t mode = 0644;
};

/// What `create_venv` writes besides directories, for the environment `prompt` (its name) of
/// `packages`; verify expects exactly these files, by content.
std::vector<VenvEntry> venv_skeleton(const Interpreter& interpreter,
                                     const std::filesystem::path& root, const std::string& prompt,
                                     const std::vector<GenerationPackage>& packages);

/// Whether an environment of `packages` gets envbox's pip: every one but those that lock a real
/// `pip` distribution, whose own pip then stands in its place.
bool wants_pip_shim(const std::vector<GenerationPackage>& packages);

/// Creates the venv skeleton at `root` (which must not exist yet): `pyvenv.cfg` (home,
/// include-system-site-packages = false, version, executable, envbox version), `bin/python`,
/// `python3`, `python3.X` symlinks to the base interpreter, `lib/python3.X/site-packages`,
/// `lib64` → `lib`, `include/`, `bin/activate` for POSIX shells, and (`wants_pip_shim`)
/// envbox's pip:
///   - `bin/pip`, `pip3`, `pip3.X` launchers and `site-packages/pip/{__init__,__main__}.py`
///     (for `python -m pip`): a package, not a distribution (no .dist-info, so neither pip
///     list nor importlib.metadata shows it), answering `list`, `freeze`, `show` and `check`
///     for the environment's own site-packages as pip does, and refusing every other command
///     (install, uninstall, …) with exit 1 and the envbox command that does it (`envbox add
///     ENV X`), inside `envbox run` or outside it;
///   - no bytecode: a read-only regular file stands at `site-packages/pip/__pycache__`, so
///     Python, which ignores a cache folder it cannot make, writes none there when the
///     environment's python runs outside `envbox run` and verify stays clean.
VenvLayout create_venv(const Interpreter& interpreter, const std::filesystem::path& root,
                       const std::string& prompt, const std::vector<GenerationPackage>& packages);

}  // namespace envbox::env
