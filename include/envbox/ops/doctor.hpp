#pragma once
/// `envbox doctor`: what this machine offers envbox.

#include <optional>
#include <string>
#include <vector>

#include "envbox/ops/context.hpp"
#include "envbox/ops/lock_agreement.hpp"

namespace envbox::ops {

struct DoctorReport {
    std::vector<std::string> interpreters;  ///< "3.11.2 /usr/bin/python3.11"
    std::optional<std::string> driver;      ///< NVIDIA driver version
    /// Where `driver` came from: "ENVBOX_CUDA_DRIVER" (assumed, not read), else "installed".
    std::string driver_source;
    std::vector<std::string> cuda_lines;       ///< lines the driver can run ("12.x", "13.x")
    std::string store_path, store_filesystem;  ///< filesystem type by name
    std::string link_mode;  ///< what placing a file in the store's filesystem gives
    unsigned long long store_free = 0;
    std::string sandbox;     ///< what `run`'s sandbox is here, tried for real (env::describe)
    bool sandboxed = false;  ///< whether `run` can keep the home read-only here

    /// One index of the project's manifests (each URL once), tried: an HTTP(S) index by a GET
    /// of its base page, a `file://` one as a path that exists and is readable.
    struct Index {
        std::string name;
        std::string url;  ///< the URL this machine uses, userinfo redacted (`***@`)
        /// The mirror variable that set `url` instead of the manifest's (ENVBOX_INDEX_<NAME>_URL);
        /// empty: the manifest's own URL.
        std::string via;
        bool ok = false;
        std::string status;                     ///< "reachable (HTTP 200)", "NOT reachable: …"
        std::vector<std::string> environments;  ///< the manifests that name it
    };
    std::vector<Index> indexes;

    /// One manifest of the project and whether this machine can run it.
    struct Environment {
        std::string name;
        std::vector<std::string>
            cuda_lines;  ///< from `cuda = "X.Y"` and the lock's packages ("12.x")
        bool ok = true;
        std::string problem;  ///< why not (the driver's refusal, a manifest error)
        /// Whether its current generation is the project's lock: a warning when not (after a
        /// rollback), never a problem (the machine lacks nothing).
        LockAgreement lock;
    };
    std::vector<Environment> environments;

    /// What a manifest of this project needs and this machine lacks, one line each: an
    /// unreachable index, an environment the driver cannot run, a manifest that does not read
    /// as every command reads it (`read_manifest`, then `index_configs`: a password in an index
    /// URL, a bad mirror variable; its indexes are then not asked), no sandbox (when the project
    /// has a manifest). Empty when all is well; `envbox doctor` exits 1 otherwise.
    std::vector<std::string> problems;
};

/// Never throws for what it checks (each finding goes into the report), only for what stops
/// it from checking at all (a malformed ENVBOX_CUDA_DRIVER: usage, exit 2).
DoctorReport doctor(const Context& ctx);

}  // namespace envbox::ops
