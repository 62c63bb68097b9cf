#pragma once
/// Installing wheels from the store into a venv (spec "Binary distribution format",
/// "Recording installed packages"): files hard-linked from store objects, scripts and
/// launchers written for the environment, RECORD rewritten, INSTALLER/REQUESTED recorded.

#include <cstdint>
#include <optional>
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

/// Installs every wheel of `requests` into `layout` in one pass: plans every destination
/// first (a path claimed by two wheels is an error naming both; directories shared by several
/// wheels, like `nvidia/cu13/lib`, are merged), creates the directories, then places files in
/// parallel with `mode` (falling back as `place_file` does, reported in `notes`).
InstallReport install_wheels(const store::Store& store, const Interpreter& interpreter,
                             const VenvLayout& layout, const std::vector<InstallRequest>& requests,
                             LinkMode mode, unsigned jobs);

}  // namespace envbox::env
