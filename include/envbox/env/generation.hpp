#pragma once
/// Generations of an environment (docs/ARCHITECTURE.md, "Environments and generations"):
/// `gen-N/` trees, each with `.envbox/` holding the lock it was built from, a description and a
/// completion stamp, and a `current` symlink switched with one rename.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace envbox::env {

struct GenerationPackage {
    std::string name, version, wheel_sha256, filename;
    bool requested = false;       ///< REQUESTED was written (a root of the environment)
    std::string direct_url;       ///< direct_url.json content, when installed from a direct URL
    bool preferred = false;       ///< in `[install].prefer`: its files won overlaps (see plan_install)
};

struct Generation {
    int number = 0;
    std::filesystem::path path;
    bool complete = false;          ///< stamped; only complete generations may become current
    std::string created;            ///< UTC, ISO 8601
    std::string lock_digest;        ///< sha256 of the lock bytes plus the target
    std::string lock_source;        ///< where the lock was read from
    std::string python;             ///< base interpreter path
    std::string python_version;     ///< "3.11.2"
    std::string platform;           ///< target platform tag
    std::string environment;        ///< the environment's name (its venv prompt)
    std::string link_mode;          ///< how files were placed: hardlink, reflink or copy
    std::vector<GenerationPackage> packages;
};

/// `gen-N` directory name.
std::string generation_dir_name(int number);

/// Every `gen-N` under `env_dir` (complete or not), by number.
std::vector<Generation> list_generations(const std::filesystem::path& env_dir);

/// The generation `current` points at, when it is a complete one.
std::optional<Generation> current_generation(const std::filesystem::path& env_dir);

/// Reads `gen/.envbox/info` (and the stamp); nullopt when absent or unreadable.
std::optional<Generation> read_generation(const std::filesystem::path& gen_path);

/// Writes `.envbox/info` and `.envbox/pylock.toml` (the lock text) into `gen.path`.
void write_generation_record(const Generation& gen, const std::string& lock_text);

/// Makes the generation durable (syncfs) and writes its completion stamp (fsynced).
void stamp_complete(const std::filesystem::path& gen_path);

/// Points `env_dir/current` at `gen-N` with one atomic rename (then fsyncs the directory).
void switch_current(const std::filesystem::path& env_dir, int number);

}  // namespace envbox::env
