#pragma once
// What envbox says when a lock would leave an environment's CUDA line: the separate environment
// a user should make instead (`envbox init train-cu130 --cuda 13.0 …`, with the indexes the
// project already uses), and the check that a lock keeps the line of the one it replaces.

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "envbox/env/cuda.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/ops/create.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/text.hpp"

namespace envbox::ops {

/// The `envbox init` command that makes an environment of its own for CUDA `line` (none: a
/// CPU-only one, `train-cpu`, without --cuda) beside `env`:
/// its name is `env` with its `cuXYZ` replaced (`train-cu128` → `train-cu130`), else
/// `env-cu130`; `--cuda` is the line init knows of that major (12.8, 13.0); `--default-index`
/// and `--cuda-index` repeat the manifest's own mirrors (those of envbox.toml init finds
/// itself). Every URL is shell-quoted when it needs to be.
std::string separate_environment_command(const std::string& env, const lock::Manifest& manifest,
                                         const std::filesystem::path& project_root,
                                         const std::optional<env::CudaLine>& line);

/// The line to suggest moving to when `manifest`'s environment is on `current` (or declares
/// it): the other line init knows (12.x → 13.0, 13.x → 12.8).
env::CudaLine other_cuda_line(const std::optional<env::CudaLine>& current,
                              const lock::Manifest& manifest);

/// The refusal of a lock of `env` that changes its CUDA line (`change`, from env::cuda_change)
/// to `after`: what changed, the separate environment to make instead, and the flag that
/// allows it. `separate` is the command that makes that environment
/// (`separate_environment_command`), `command` the one to repeat with --allow-cuda-change.
std::string cuda_change_refusal(const std::string& env, const std::string& change,
                                const std::optional<env::CudaLine>& after,
                                const std::string& separate, const std::string& command,
                                const std::filesystem::path& lock_path);

/// The CUDA identity of the lock `text` (`shown` names it in errors); nullopt when it does not
/// read as a lock.
std::optional<env::CudaIdentity> lock_identity(const std::string& text,
                                               const std::filesystem::path& shown);

/// Refuses (invalid_input) a lock `doc` that moves the environment off the CUDA line (or torch
/// label) of the lock it replaces (`before`, its text; "" when there is none), unless
/// `opt.allow_cuda_change`; returns the change when allowed, for the report.
std::optional<std::string> check_cuda_line(const LockOptions& opt, const lock::Manifest& m,
                                           const std::string& before, const lock::LockDocument& doc,
                                           const std::filesystem::path& project_root,
                                           const std::filesystem::path& lock_path);

/// `e`, a failed resolution, with the separate-environment suggestion when it failed on a
/// `[sources]` pin of an environment that declares a CUDA line.
Error with_separate_environment_hint(const Error& e, const std::string& env,
                                     const lock::Manifest& m,
                                     const std::filesystem::path& project_root);

/// The CUDA line of `edir`'s current generation (an environment's folder under `home`) against the
/// lock `lock_text` (at `lock_path`) whose selection for this machine is `now` (name, version):
/// create's check that an environment moves to another line only on purpose, on every path that
/// builds one (`git pull
/// && envbox create`, `pull --update-lock`, `unpack`, run's sync). No current generation, or the
/// same line: nothing. A move is allowed with `opt.allow_cuda_change`, or when this machine's
/// `lock --allow-cuda-change` wrote these very bytes (`approve_cuda_move`), and then returned
/// ("CUDA 12.8 → 13.0 (…)") for the caller to show; run's sync (`opt.keep_cuda_line`) never
/// moves. Otherwise refused (invalid_input): the change, the change list, the command to repeat
/// with --allow-cuda-change (`opt.retry`, else `envbox create ENV`) and how to keep the
/// generation as it is.
// shape: the options, the home and environment's folder, what it would install, from which lock.
std::optional<std::string> check_cuda_move(
    const CreateOptions& opt, const std::filesystem::path& home, const std::filesystem::path& edir,
    const std::vector<std::pair<std::string, std::string>>& now, const std::string& lock_text,
    const std::filesystem::path& lock_path);

/// Records that `lock --allow-cuda-change` wrote `lock_text` for the environment in `edir` (on
/// this machine, under `home`): a `create` of these bytes then moves the line without the flag,
/// a lock of other bytes (a teammate's, merged) does not.
void approve_cuda_move(const std::filesystem::path& home, const std::filesystem::path& edir,
                       const std::string& lock_text);

}  // namespace envbox::ops
