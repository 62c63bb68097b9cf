#pragma once
/// `envbox list` and `envbox show ENV`.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envbox/env/generation.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/lock_agreement.hpp"

namespace envbox::ops {

struct EnvSummary {
    std::string project;  ///< project root path
    std::string name;
    std::optional<int> current;  ///< current generation number
    std::size_t generations = 0;
    std::vector<int> pinned;  ///< pinned generations that exist (`envbox pin`)
    std::size_t packages = 0;
    std::string python_version;
    /// Whether the current generation is its project's lock (after a rollback it may not be).
    LockAgreement lock;
};

/// Environments of the current project, or of every project when `all` (or when there is no
/// project here), sorted by project and name.
std::vector<EnvSummary> list_environments(const Context& ctx, bool all);

struct EnvDetails {
    std::string name;
    std::filesystem::path path;  ///< env directory
    std::vector<env::Generation> generations;
    std::optional<env::Generation> current;
    /// Whether `current` is the project's lock, and which generation the lock file is.
    LockAgreement lock;
    std::vector<int> pinned;         ///< pinned generations that exist (`envbox pin`)
    std::size_t files = 0;           ///< in the current generation
    std::uint64_t bytes = 0;         ///< apparent size of the current generation
    std::uint64_t unique_bytes = 0;  ///< bytes no other generation or environment shares
    /// Its `.pyc` files (in `__pycache__`): their bytes, and of those the bytes another
    /// generation or environment links too (the rest, `bytecode_bytes - bytecode_shared_bytes`,
    /// is what deleting this generation alone would free).
    std::size_t bytecode_files = 0;
    std::uint64_t bytecode_bytes = 0, bytecode_shared_bytes = 0;
    /// Packages of `current` whose wheel envbox built from an sdist (here, or on the machine
    /// that pushed or packed it): name → the build's key digest (`store-v1/builds/<digest>`).
    std::map<std::string, std::string> built;
    /// Its run-time compile caches (`cache/compile/<project>.<env>/`, ops/run.cpp): the folder
    /// and the bytes of the files in it.
    std::filesystem::path compile_cache;
    std::uint64_t compile_cache_bytes = 0;
};

EnvDetails show_environment(const Context& ctx, const std::string& env);

/// For each store object digest in `digests`: the generations of every environment in the home
/// (all projects) built from a wheel that holds it, as "ENV generation N (PROJECT)", sorted. A
/// touched object changed all of them; this says who is affected.
std::map<std::string, std::vector<std::string>> generations_linking(
    const Context& ctx, const std::set<std::string>& digests);

}  // namespace envbox::ops
