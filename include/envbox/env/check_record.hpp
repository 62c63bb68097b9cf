#pragma once
/// The record of `envbox check` (docs/ARCHITECTURE.md, "Runtime check"): what one generation's
/// runtime looked like when it was checked, kept beside the generation, never inside it
/// (generations stay immutable):
///
///   envs/<project key>/<ENV>/checks/gen-N   "envbox-check 1", then one line per fact:
///       generation N | when 2026-12-06T10:00:00Z | python 3.12.3
///       import MODULE ok|failed|timeout SECONDS [MESSAGE]
///       gpu-none WHY | gpu-failed WHY | torch V | cuda V | cudnn V | nccl V | device NAME |
///       capability sm_XY arch-list sm_80,sm_90 | context-bytes N | matmul-tflops X | gpu-error
///       MESSAGE cache VARIABLE FILES BYTES
///
/// Values are percent-encoded (kv::percent_encode). The probe envbox runs in the generation
/// prints the same lines (under its own header, `envbox-check-probe 1`, without generation,
/// when and cache), so one reader validates both: every line bounded, every name an
/// identifier path, every number a number, every text printable and at most 2000 bytes. A
/// line of a kind this envbox does not know is refused.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace envbox::env {

/// One top-level module imported in a child process of its own.
struct ImportResult {
    enum class Status { ok, failed, timeout };
    std::string module;
    Status status = Status::ok;
    double seconds = 0;
    std::string message;  ///< failed or timeout: the last line of its error
};

/// What the GPU child measured; `none` says why nothing was (no torch, no GPU), `failed` why
/// the measurement itself failed (a CUDA error, a crash: a finding).
struct GpuFigures {
    std::string none, failed;
    std::string torch, cuda, cudnn, nccl, device, capability;
    std::vector<std::string> arch_list;  ///< torch.cuda.get_arch_list()
    std::optional<std::uint64_t> context_bytes;
    std::optional<double> matmul_tflops;  ///< bf16 4096² products
    std::vector<std::string> errors;
    /// The device's `sm_XY` is in `arch_list`, or a `compute_XY` (PTX) at or below it is; true
    /// when either is unknown.
    bool arch_supported() const;
};

/// A compile cache envbox pointed at the environment's folder, as counted at the check.
struct CacheUse {
    std::string variable;
    std::uint64_t files = 0, bytes = 0;
};

struct CheckRecord {
    int generation = 0;
    std::string when;  ///< UTC, ISO 8601
    std::string python;
    std::vector<ImportResult> imports;
    GpuFigures gpu;
    std::vector<CacheUse> caches;
    /// What is wrong: "import X failed: MESSAGE", "import X timed out", "NVIDIA H100 (sm_90) is
    /// not among the architectures torch was built for (sm_80, …)". Empty: the check is clean.
    std::vector<std::string> findings() const;
};

/// "torch", "nvidia.cublas": identifiers joined by dots, at most 200 characters: a module name
/// as the probe is given and reports one.
bool is_module_name(std::string_view s);

/// Reads the probe's output (`probe`: header `envbox-check-probe 1`, nothing of generation,
/// when or cache) or a record (header `envbox-check 1`). Throws `Error` (integrity) naming
/// `what` and the line for anything malformed. `expected`: the probe's modules; an import of
/// another module, or one reported twice, is refused (ignored when empty).
CheckRecord parse_check(std::string_view text, const std::string& what, bool probe,
                        const std::vector<std::string>& expected = {});

/// The record's text, as `parse_check` reads it back.
std::string check_record_text(const CheckRecord& record);

/// `env_dir/checks/gen-N`.
std::filesystem::path check_record_path(const std::filesystem::path& env_dir, int generation);

/// Writes `record` as generation `record.generation`'s check, replacing an earlier one (a
/// temporary file and one rename; `checks/` made as envbox's own folder, never through a link).
void write_check_record(const std::filesystem::path& env_dir, const CheckRecord& record);

/// Generation N's check; nullopt when it was never checked. Throws (integrity) for a damaged
/// record, naming it.
std::optional<CheckRecord> read_check_record(const std::filesystem::path& env_dir, int generation);

/// Every checked generation's record, oldest generation first; a damaged record is skipped and
/// named in `damaged` when given.
std::vector<CheckRecord> read_check_records(const std::filesystem::path& env_dir,
                                            std::vector<std::string>* damaged = nullptr);

/// Removes generation N's check record, if any (with the generation, by gc and delete).
void remove_check_record(const std::filesystem::path& env_dir, int generation);

}  // namespace envbox::env
