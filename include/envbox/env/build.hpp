#pragma once
/// The generation transaction, as one call: a new generation's venv, its links from the store,
/// its record, sealed read-only, stamped complete and made current, or, on any failure,
/// nothing left of it and the previous generation still current.

#include <filesystem>
#include <string>
#include <vector>

#include "envbox/env/generation.hpp"
#include "envbox/env/installer.hpp"

namespace envbox::env {

struct BuildOptions {
    std::string env;        ///< the environment's name: the venv's prompt
    std::string lock_text;  ///< recorded with the generation
    LinkMode link_mode = LinkMode::hardlink;
    unsigned jobs = 1;
};

/// What building did, and how long each step took.
struct BuildReport {
    InstallReport install;  ///< `dirs` already sealed, and emptied
    double install_s = 0, seal_s = 0, commit_s = 0;
};

/// Builds `gen` (numbered and pathed by the caller, in `env_dir`) from `requests` and switches
/// `env_dir`'s `current` to it; sets `gen.pip_shim`. On an error the half-built generation is
/// removed (the error says which generation of `opt.env` failed).
BuildReport build_generation(const store::Store& store, const Interpreter& interpreter,
                             Generation& gen, const std::filesystem::path& env_dir,
                             const std::vector<InstallRequest>& requests, const BuildOptions& opt);

}  // namespace envbox::env
