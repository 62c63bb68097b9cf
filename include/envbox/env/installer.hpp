#pragma once
/// Installing wheels from the store into a venv (spec "Binary distribution format",
/// "Recording installed packages"): files hard-linked from store objects, scripts and
/// launchers written for the environment, RECORD rewritten, INSTALLER/REQUESTED recorded.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envbox/env/interpreter.hpp"
#include "envbox/env/venv.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::env {

struct InstallRequest {
    const store::WheelFiles* wheel = nullptr;
    bool requested = false;                   ///< write REQUESTED (a root of the lock)
    std::optional<std::string> direct_url;    ///< direct_url.json content (PEP 610), if any
};

struct InstallReport {
    std::size_t packages = 0;
    std::size_t files = 0;           ///< files placed in the environment
    std::size_t hardlinked = 0, reflinked = 0, copied = 0;
    std::size_t generated = 0;       ///< files written (scripts, launchers, RECORD, …)
    std::uint64_t bytes = 0;         ///< bytes of all placed files
    /// One line per fallback taken ("hard links not possible here (EXDEV): copied").
    std::vector<std::string> notes;
};

/// One file the environment must hold.
struct PlannedFile {
    std::string rel;                            ///< path relative to the environment root
    const store::WheelFile* object = nullptr;   ///< linked from this store object, or
    std::string content;                        ///< written with this content
    bool executable = false;
    std::size_t wheel = 0;                      ///< index into the requests
};

/// Everything an installation writes, decided before anything is written.
struct InstallPlan {
    std::vector<PlannedFile> files;
    std::set<std::string> dirs;                 ///< every directory the files need (relative)
    std::vector<std::string> wheel_labels;      ///< "name version (file name)" per request
    std::vector<std::string> dist_info_dirs;    ///< relative `.dist-info` directory per request
};

/// Plans the installation of `requests` into `layout` (which need not exist): scheme mapping,
/// scripts and launchers, RECORD, INSTALLER, REQUESTED, direct_url.json. A path claimed by two
/// wheels, or a file in one wheel that is a directory in another, is an error naming both.
InstallPlan plan_install(const store::Store& store, const Interpreter& interpreter,
                         const VenvLayout& layout, const std::vector<InstallRequest>& requests);

/// Writes a plan: directories, then files in parallel with `mode`.
InstallReport apply_install(const store::Store& store, const VenvLayout& layout, const InstallPlan& plan,
                            LinkMode mode, unsigned jobs);

/// Installs every wheel of `requests` into `layout` in one pass: plans every destination
/// first (a path claimed by two wheels is an error naming both; directories shared by several
/// wheels, like `nvidia/cu13/lib`, are merged), creates the directories, then places files in
/// parallel with `mode` (falling back as `place_file` does, reported in `notes`).
InstallReport install_wheels(const store::Store& store, const Interpreter& interpreter,
                             const VenvLayout& layout, const std::vector<InstallRequest>& requests,
                             LinkMode mode, unsigned jobs);

}  // namespace envbox::env
