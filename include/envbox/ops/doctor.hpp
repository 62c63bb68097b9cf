#pragma once
/// `envbox doctor`: what this machine offers envbox.

#include <optional>
#include <string>
#include <vector>

#include "envbox/ops/context.hpp"

namespace envbox::ops {

struct DoctorReport {
    std::vector<std::string> interpreters;      ///< "3.11.2 /usr/bin/python3.11"
    std::optional<std::string> driver;          ///< NVIDIA driver version
    std::vector<std::string> cuda_lines;        ///< lines the driver can run ("12.x", "13.x")
    std::string store_path, store_filesystem;   ///< filesystem type by name
    std::string link_mode;                      ///< what placing a file in the store's filesystem gives
    unsigned long long store_free = 0;
    std::vector<std::string> indexes;           ///< "pypi https://… reachable (HTTP 200)" per manifest index
    std::string sandbox;                        ///< what `run`'s sandbox is here, tried for real (env::describe)
    bool sandboxed = false;                     ///< whether `run` can keep the home read-only here
};

DoctorReport doctor(const Context& ctx);

}  // namespace envbox::ops
