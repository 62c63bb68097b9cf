#pragma once
/// `envbox init ENV`: a first manifest for this machine, so nobody has to know a platform tag.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envbox/env/interpreter.hpp"
#include "envbox/ops/context.hpp"

namespace envbox::ops {

struct InitOptions {
    std::string env;
    std::optional<std::string> python;  ///< "3.12"; absent: the default interpreter's version
    std::optional<std::string> cuda;    ///< "12.8" or "13.0": the PyTorch index for that line
    /// `--default-index`: the URL of the index named `pypi` instead of PyPI's (a mirror).
    std::optional<std::string> default_index;
    /// `--cuda-index`: the URL of the PyTorch index of `cuda` instead of download.pytorch.org's.
    std::optional<std::string> cuda_index;
    /// `--platform`: the manifest's platform tag; absent: `default_platform`'s choice.
    std::optional<std::string> platform;
    /// `--from FILE`: a requirements file or a pyproject.toml whose requirements, editable
    /// folders, constraints and indexes the manifest takes (ops/init_from.hpp).
    std::optional<std::filesystem::path> from;
};

/// Where `init` left the `.gitattributes` line that shows lock diffs through envbox.
enum class LockDiffAttribute {
    added,    ///< appended to PROJECT/.gitattributes (created when missing)
    present,  ///< a line there already gives `manifests/pylock.*.toml` a diff driver
    refused,  ///< not written: the path is a link or not a regular file, or cannot be written
};

/// The `.gitattributes` line `init` writes: git then diffs locks with the `pylock` driver.
inline constexpr const char* kLockDiffAttribute = "manifests/pylock.*.toml diff=pylock";
/// The one `git config` each clone needs for that driver: git never takes a command from a
/// repository's files, so `.gitattributes` can only name it.
inline constexpr const char* kLockDiffGitConfig =
    "git config diff.pylock.textconv \"envbox diff --textconv\"";

struct InitResult {
    std::filesystem::path manifest;  ///< the file written
    env::Interpreter interpreter;    ///< the interpreter found (its version is the manifest's)
    std::string platform;            ///< the platform tag written
    /// Why that platform, for the user ("platform manylinux_2_28_x86_64 (PyTorch's floor; …)").
    std::string platform_note;
    std::optional<std::string> cuda;
    std::string cuda_index;  ///< the PyTorch index of `cuda` (its URL, or envbox.toml's entry)
    std::string text;        ///< what was written
    /// The indexes of the project's `envbox.toml` the manifest uses (not replaced by its own).
    std::vector<std::string> shared_indexes;
    std::filesystem::path gitattributes;  ///< PROJECT/.gitattributes
    LockDiffAttribute lock_diff = LockDiffAttribute::refused;
    std::string lock_diff_problem;          ///< why it was refused ("it is a symbolic link")
    std::size_t imported = 0;               ///< requirements taken from `--from`
    std::vector<std::string> untranslated;  ///< what of `--from` has no manifest setting
};

/// The platform a new manifest gets on a machine whose interpreter is `interpreter`:
/// `manylinux_2_28_<arch>` (PyTorch's own wheels' floor) when this machine's glibc is newer, so
/// a manifest the team shares never asks for a glibc older nodes lack; this machine's own
/// `manylinux_<glibc>_<arch>` when its glibc is 2.28 or older. `note` says which and why.
/// Throws invalid_input (exit 3) when the interpreter reports no glibc (`--platform` then).
struct DefaultPlatform {
    std::string tag, note;
};
DefaultPlatform default_platform(const env::Interpreter& interpreter, const std::string& env);

/// The indexes a new manifest is written for.
struct IndexChoice {
    std::optional<std::string> cuda;  ///< the CUDA line, whose PyTorch index it gets
    /// The indexes of the project's `envbox.toml`: when it has some, no PyPI entry is written,
    /// nor a PyTorch one when it has one of that name (a same-named entry would hide the
    /// project's); a comment names the project's indexes that apply.
    std::vector<std::string> project_indexes;
    /// When not empty, a mirror's URLs for PyPI and the PyTorch index, written even then.
    std::string default_index, cuda_index;
};

/// The manifest text `init` writes: the interpreter's X.Y and `platform`, PyPI as the index,
/// and with a CUDA line the PyTorch index for that line (`pytorch-cuXYZ`), `explicit`, as the
/// `[sources]` of torch, torchvision, torchaudio and triton, as `choice` says. Every key is one
/// `lock::Manifest::parse` knows.
std::string initial_manifest(const std::string& python_xy, const std::string& platform,
                             const std::string& comment, const IndexChoice& choice);

/// Of `project_indexes`, the ones the manifest `initial_manifest` writes for these arguments
/// does not replace with its own.
std::vector<std::string> project_indexes_used(const std::vector<std::string>& project_indexes,
                                              const std::optional<std::string>& cuda,
                                              const std::string& default_index,
                                              const std::string& cuda_index);

/// Writes `ctx.project_root/manifests/ENV.toml` (creating `manifests/`), finding the interpreter
/// as create does (`ENVBOX_PYTHON`, PATH, …). Never replaces a file: an existing manifest is
/// an error (exit 1) naming it, and a concurrent init loses cleanly (the file is linked into
/// place, never renamed over). Throws usage (exit 2) for a bad name, version, CUDA line,
/// platform tag (one the manifest reader refuses) or index URL (not http(s):// or file://, or
/// `--cuda-index` without `--cuda`), before anything is written. Then appends
/// `kLockDiffAttribute` to PROJECT/.gitattributes unless it has it, opened without following a
/// link (one planted there is `refused`, never written through, and init still succeeds).
InitResult init(const Context& ctx, const InitOptions& options);

}  // namespace envbox::ops
