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
