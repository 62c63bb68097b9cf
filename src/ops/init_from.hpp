#pragma once
// `init --from FILE` and `add -r FILE`: a team's existing environment definition, a pip
// requirements file or a project's pyproject.toml, read as hostile input (bounded, every line
// checked) into what a manifest says, with what cannot be translated named by FILE:LINE.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace envbox::ops {

struct Imported {
    std::vector<std::string> requirements;  ///< PEP 508 texts, as written (canonical form)
    /// `-e PATH` / the project itself: its `[project]` name and its folder relative to the
    /// manifests/ folder, installed editable.
    struct Editable {
        std::string name, path;
        std::string requirement;  ///< its name with the extras written (`pkg[dev]`)
    };
    std::vector<Editable> editables;
    std::vector<std::string> constraints;    ///< `-c FILE`'s requirements
    std::optional<std::string> index_url;    ///< `--index-url` / `-i`
    std::vector<std::string> extra_indexes;  ///< `--extra-index-url`, `--find-links` folders
    std::vector<std::string> untranslated;   ///< "FILE:LINE: what (why)", for the user
};

/// A pip requirements file: requirements and markers as they are, `-r`/`-c` files followed
/// (relative to the file naming them; at most 32 deep, each read once), `-e PATH` a local
/// editable source, `-i`/`--index-url`, `--extra-index-url`, `-f`/`--find-links` of a folder;
/// `--hash` and anything else named in `untranslated`. `manifests` is where the manifest goes
/// (paths are written relative to it).
Imported import_requirements(const std::filesystem::path& file,
                             const std::filesystem::path& manifests);

/// A project's pyproject.toml: the project itself, editable, required by its name (its
/// dependencies and extras come with it at `lock`); `[tool.uv]`, `[tool.pixi]`, `[tool.poetry]`
/// and `[tool.pdm]` tables named in `untranslated`.
Imported import_pyproject(const std::filesystem::path& file,
                          const std::filesystem::path& manifests);

/// By its file name: `pyproject.toml` or a requirements file.
Imported import_environment(const std::filesystem::path& file,
                            const std::filesystem::path& manifests);

}  // namespace envbox::ops
