#pragma once
/// `envbox run ENV -- CMD…`: the computed environment a command runs with.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "envbox/ops/context.hpp"

namespace envbox::ops {

struct RunPlan {
    std::filesystem::path generation;            ///< the generation the command runs in
    std::vector<std::string> argv;
    std::map<std::string, std::string> environment;
    std::vector<std::string> notes;              ///< what was changed, for -v
};

/// The environment for running `argv` in ENV's current generation, starting from `base`
/// (the caller's environment): `bin/` first on PATH, VIRTUAL_ENV set, PYTHONPATH and
/// PYTHONHOME removed, PYTHONNOUSERSITE=1, then the manifest's `[run].env`. Throws when the
/// environment has no complete generation.
RunPlan plan_run(const Context& ctx, const std::string& env, std::vector<std::string> argv,
                 std::map<std::string, std::string> base);

}  // namespace envbox::ops
