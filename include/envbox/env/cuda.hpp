#pragma once
/// CUDA lines: which CUDA a locked package is built for, whether a lock mixes lines, and whether
/// this machine's NVIDIA driver can run a line. The one table of driver minimums lives here.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envbox/pep/version.hpp"

namespace envbox::env {

/// A CUDA line as packages declare it: major, and minor when the package says (`+cu128` → 12.8;
/// `nvidia-cublas-cu12` → 12).
struct CudaLine {
    int major = 0;
    std::optional<int> minor;
    std::string str() const;  ///< "12.8", "12.x"
};

/// The line a package is built for, from its name and version: torch-family local labels
/// (`+cu128`, `+cu130`), `nvidia-*-cu12`/`-cu13` names, `nvidia-*` and `cuda-*` 12.x/13.x
/// versions, `cupy-cuda12x`, `jax-cuda12-*`. Nothing for packages that carry no CUDA.
std::optional<CudaLine> cuda_line_of(const std::string& name, const pep::Version& version);

struct CudaPackage {
    std::string name;
    std::string version;
    CudaLine line;
};

/// Why a set of packages (and a declared `cuda = "X.Y"`) is not one CUDA line: each side named,
/// or nothing when it is coherent.
std::optional<std::string> cuda_incoherence(const std::vector<CudaPackage>& packages,
                                            const std::optional<std::string>& declared);

/// An environment's CUDA line as its locked packages show it: the most precise line any of them
/// declares (torch's `+cu128`, 12.8, over `nvidia-cublas-cu12`'s 12.x), and torch's own version
/// when torch is locked (its local label, `+cu128` or `+cpu`, is what a job imports).
struct CudaIdentity {
    std::optional<CudaLine> line;
    std::string torch;  ///< torch's version ("2.9.1+cu128"), empty without torch
};

/// The identity of `packages` (name, version as locked); versions that do not parse count as
/// no CUDA.
CudaIdentity cuda_identity(const std::vector<std::pair<std::string, std::string>>& packages);

/// How `after` changes the CUDA line of `before`: "CUDA 12.8 → 13.0 (torch 2.9.1+cu128 →
/// 2.10.0+cu130)", or "CUDA 12.8 → none (torch 2.9.1+cu128 → 2.9.1+cpu)". Nothing when it does
/// not: the same line (12.x and 12.8 agree), no line before (an environment's first CUDA), or
/// torch and every CUDA package gone (nothing is left to run on another line).
std::optional<std::string> cuda_change(const CudaIdentity& before, const CudaIdentity& after);

/// The NVIDIA driver version: `assumed` (ENVBOX_CUDA_DRIVER, as the cli read it) when not
/// empty, else /sys/module/nvidia/version, else NVML (libnvidia-ml.so.1 through dlopen), else
/// /proc/driver/nvidia/version. Nothing when there is no NVIDIA driver. Throws (usage, exit 2)
/// when `assumed` is anything but a driver version ("550.54.15").
std::optional<std::string> nvidia_driver_version(const std::string& assumed);

/// The driver a CUDA major line needs (cu13x: 580, cu12x: 525.60.13).
std::optional<std::string> minimum_driver(int cuda_major);

/// Whether `driver` can run `line`; the error message says what to do when not.
std::optional<std::string> driver_refuses(const std::string& driver, const CudaLine& line);

}  // namespace envbox::env
