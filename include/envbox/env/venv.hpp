#pragma once
/// PEP 405 virtual environments, created directly (no `python -m venv`).

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

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

/// What `create_venv` writes besides directories (used by verify to know what to expect).
std::vector<VenvEntry> venv_skeleton(const Interpreter& interpreter,
                                     const std::filesystem::path& root, const std::string& prompt);

/// Creates the venv skeleton at `root` (which must not exist yet): `pyvenv.cfg` (home,
/// include-system-site-packages = false, version, executable, envbox version), `bin/python`,
/// `python3`, `python3.X` symlinks to the base interpreter, `lib/python3.X/site-packages`,
/// `lib64` → `lib`, `include/`, and `bin/activate` for POSIX shells.
VenvLayout create_venv(const Interpreter& interpreter, const std::filesystem::path& root,
                       const std::string& prompt);

}  // namespace envbox::env
