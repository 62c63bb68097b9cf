#pragma once
/// A project's layout, spelled in one place: `manifests/ENV.toml` and its lock
/// `manifests/pylock.ENV.toml`.

#include <filesystem>
#include <string>
#include <string_view>

#include "envbox/lock/lock_file.hpp"

namespace envbox::ops {

struct Project {
    std::filesystem::path root;  ///< holds manifests/; empty: no project (a command given --lock)

    std::filesystem::path manifests() const { return root / "manifests"; }
    std::filesystem::path manifest(const std::string& env) const {
        return manifests() / (env + ".toml");
    }
    std::filesystem::path lock(const std::string& env) const { return root / lock_name(env); }

    /// `manifests/pylock.ENV.toml`: the lock's path from the root, as messages and git name it.
    static std::string lock_name(const std::string& env) {
        return "manifests/pylock." + env + ".toml";
    }

    /// Throws invalid_input, "no project here (no manifests/ directory in this directory or
    /// above)" and `hint` after it, when there is none; else the project.
    const Project& required(std::string_view hint = {}) const;

    /// The lock of `env`, read once (lock::read_lock_file): invalid_input "no lock file P (run
    /// `envbox lock ENV` to write it)" when there is none, the parse error when it is no lock.
    lock::LockFile read_lock(const std::string& env) const;
};

}  // namespace envbox::ops
