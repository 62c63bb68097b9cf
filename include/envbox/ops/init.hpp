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
};

struct InitResult {
    std::filesystem::path manifest;  ///< the file written
    env::Interpreter interpreter;    ///< the interpreter found (its version is the manifest's)
    std::string platform;            ///< the platform tag written
    std::optional<std::string> cuda;
    std::string cuda_index;  ///< the PyTorch index URL of `cuda`, when set
    std::string text;        ///< what was written
    /// The indexes the project's `envbox.toml` gives (then the manifest names no PyPI).
    std::vector<std::string> shared_indexes;
};

/// The manifest text `init` writes: the interpreter's X.Y and `platform`, PyPI as the index
/// (or, when the project's `envbox.toml` gives indexes, named in `shared_indexes`, a comment
/// naming them instead), and with `cuda` the PyTorch index for that line, `explicit`, as the
/// `[sources]` of torch, torchvision, torchaudio and triton. Every key is one
/// `lock::Manifest::parse` knows.
/// `default_index` and `cuda_index`, when not empty, replace the URLs of PyPI and of the
/// PyTorch index (a mirror's); a default index is written even when the project gives some.
std::string initial_manifest(const std::string& python_xy, const std::string& platform,
                             const std::optional<std::string>& cuda, const std::string& comment,
                             const std::vector<std::string>& shared_indexes = {},
                             const std::string& default_index = {},
                             const std::string& cuda_index = {});

/// Writes `ctx.project_root/manifests/ENV.toml` (creating `manifests/`), finding the interpreter
/// as create does (`ENVBOX_PYTHON`, PATH, …). Never replaces a file: an existing manifest is
/// an error (exit 1) naming it, and a concurrent init loses cleanly (the file is linked into
/// place, never renamed over). Throws usage (exit 2) for a bad name, version, CUDA line or
/// index URL (not http(s):// or file://, or `--cuda-index` without `--cuda`).
InitResult init(const Context& ctx, const InitOptions& options);

}  // namespace envbox::ops
