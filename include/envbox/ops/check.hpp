#pragma once
/// `envbox check ENV`: the runtime check of a generation (docs/ARCHITECTURE.md, "Runtime
/// check"). Every top-level module the environment's wheels install is imported in a child
/// process of its own, bounded in time; with torch and an NVIDIA GPU, the device against the
/// architectures torch was built for, the CUDA/cuDNN/NCCL versions torch loads, the GPU memory
/// a bare CUDA context takes and a fixed bf16 matrix-product throughput are measured. All of it
/// runs as `envbox run` runs a command: the generation's interpreter, run's environment, run's
/// sandbox. The result is kept beside the generation (env/check_record.hpp) and compared with
/// another generation's.

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envbox/env/check_record.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/run.hpp"
#include "envbox/store/store.hpp"

namespace envbox::ops {

struct CheckOptions {
    std::optional<int> generation;      ///< none: the current one
    std::vector<std::string> skip;      ///< modules (or their packages' prefixes) not imported
    std::chrono::seconds timeout{120};  ///< each import; the GPU measurement gets 300 s at least
    int jobs = 0;                       ///< imports at once; 0: the machine's cores, at most 8
    SandboxMode sandbox = SandboxMode::automatic;
    std::map<std::string, std::string> base;  ///< the caller's environment, as run takes it
};

struct CheckResult {
    env::CheckRecord record;
    std::filesystem::path record_path;  ///< where it was kept
    std::string sandbox;                ///< how the probe was confined (env::describe)
    std::vector<std::string> notes;     ///< what run's plan changed, for -v
};

/// The modules `wheel` installs at top level, as `import` names them: a folder with an
/// `__init__.py` (or an `__init__` extension), a `.py` file, an extension module (`NAME.*.so`);
/// a folder without `__init__` is a namespace package, whose own packages and modules count
/// (`nvidia.cublas`). Members under `NAME.data/purelib/` and `platlib/` count as at the top.
/// Only identifiers; never `__pycache__` or the folders wheels ship by mistake (`tests`,
/// `test`, `docs`, `examples`, `benchmarks`).
std::vector<std::string> top_level_modules(const store::WheelFiles& wheel);

/// Checks ENV's current generation (or `options.generation`) and keeps the record. Throws as
/// `plan_run_in` does, (exit 1) when the probe could not run, failed or ran past its time, and
/// (exit 5, nothing kept) when its output does not read as the probe's: a malformed line, more
/// than 4 MiB, or not exactly one line per module asked for.
CheckResult check_environment(const Context& ctx, const std::string& env,
                              const CheckOptions& options);

/// Generation N's kept check; throws (exit 2) when it was never checked, naming the command.
env::CheckRecord kept_check(const Context& ctx, const std::string& env, int generation);

/// What changed from `before` to `after`, one line each: "cuda context 512 MiB → 724 MiB
/// (+212 MiB)", "bf16 matmul 710.2 → 690.1 TFLOP/s (−2.8 %)", "cudnn 91002 → 91300", "import
/// flash_attn now fails: …", "import flash_attn fixed". Empty: nothing a person would act on.
std::vector<std::string> compare_checks(const env::CheckRecord& before,
                                        const env::CheckRecord& after);

/// The newest generation of ENV whose kept check is clean, other than `except`.
std::optional<int> last_clean_check(const Context& ctx, const std::string& env,
                                    std::optional<int> except = std::nullopt);

/// The newest generation below `below` with a kept check; nothing when none (or when the
/// records do not read: this is only a hint).
std::optional<int> newest_check_before(const Context& ctx, const std::string& env, int below);

}  // namespace envbox::ops
