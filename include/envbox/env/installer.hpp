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
    bool requested = false;                 ///< write REQUESTED (a root of the lock)
    std::optional<std::string> direct_url;  ///< direct_url.json content (PEP 610), if any
    /// Named in the manifest's `[install].prefer`: where wheels ship one path with different
    /// content, this wheel's file is installed and the others' RECORDs leave the path out.
    bool preferred = false;
    /// Its bytecode lists (one per optimisation level): each compiled source gets its `.pyc`
    /// in `__pycache__` beside it, linked from the store; RECORD does not list them (the spec
    /// lets `.pyc` files be omitted, and pip's uninstall removes a listed source's cache).
    std::vector<const store::WheelBytecode*> bytecode;
};

struct InstallReport {
    std::size_t packages = 0;
    std::size_t files = 0;  ///< files placed in the environment
    std::size_t hardlinked = 0, reflinked = 0, copied = 0;
    std::size_t generated = 0;  ///< files written (scripts, launchers, RECORD, …)
    std::size_t bytecode = 0;   ///< `.pyc` files placed (counted in `files` too)
    std::uint64_t bytes = 0;    ///< bytes of all placed files
    /// One line per fallback taken ("hard links not possible here (EXDEV): copied").
    std::vector<std::string> notes;
    /// Every directory the installation made (relative to the environment root), for
    /// `seal_generation`.
    std::vector<std::string> dirs;
};

/// One file the environment must hold.
struct PlannedFile {
    std::string rel;                           ///< path relative to the environment root
    const store::WheelFile* object = nullptr;  ///< linked from this store object, or
    std::string content;                       ///< written with this content
    bool executable = false;
    std::size_t wheel = 0;  ///< index into the requests
    bool bytecode = false;  ///< a `.pyc` from a bytecode list
};

/// Everything an installation writes, decided before anything is written.
struct InstallPlan {
    std::vector<PlannedFile> files;
    std::set<std::string> dirs;               ///< every directory the files need (relative)
    std::vector<std::string> wheel_labels;    ///< "name version (file name)" per request
    std::vector<std::string> dist_info_dirs;  ///< relative `.dist-info` directory per request
    /// One line per pair of wheels whose overlap `preferred` decided ("opencv-python-headless
    /// 4.10 (…) wins 2 paths over opencv-python 4.10 (…) ([install] prefer)").
    std::vector<std::string> notes;
};

/// Plans the installation of `requests` into `layout` (which need not exist): scheme mapping,
/// scripts and launchers, RECORD, INSTALLER, REQUESTED, direct_url.json.
///
/// Overlaps (pip and uv install them; envbox decides them here, before anything is written):
/// - a path several wheels ship with the same content and mode (the empty `nvidia/__init__.py`
///   of every CUDA 12 wheel) is placed once and listed in every claimant's RECORD;
/// - a path shipped with different content (or mode) is an install conflict
///   (ErrorCode::conflict) naming the path and two wheels, unless exactly one of the contents
///   comes from `preferred` wheels: that one is installed, and the RECORD of each wheel whose
///   content lost omits the path (a RECORD never lists a hash its file does not have, and
///   uninstalling that wheel with pip leaves the winner's file in place); a `.pyc` is placed
///   exactly when its own source is (the winner brings its bytecode, or none);
/// - a path in a claimant's own `.dist-info`, a path claimed twice by one wheel, and a file of
///   one wheel that is a directory in another stay conflicts whatever `preferred` says.
/// Deterministic in `requests`: `verify` recomputes the same plan from a generation's record.
InstallPlan plan_install(const store::Store& store, const Interpreter& interpreter,
                         const VenvLayout& layout, const std::vector<InstallRequest>& requests);

/// Writes a plan: directories, then files in parallel with `mode`, each store object placed
/// through `ops` (`place_file_at`: its fallbacks counted in the report, a copy forced by EMLINK
/// as a copy). A failure (ENOSPC, …) throws the `Error` of the file it hit, `sys_errno()` set;
/// that file is not left half-written, the ones placed before it stay.
InstallReport apply_install(const store::Store& store, const VenvLayout& layout,
                            const InstallPlan& plan, LinkMode mode, unsigned jobs,
                            const LinkOps& ops = LinkOps::system());

/// Installs every wheel of `requests` into `layout` in one pass: plans every destination
/// first (`plan_install`: overlaps decided, directories shared by several wheels, like
/// `nvidia/cu13/lib`, merged), creates the directories, then places files in parallel with
/// `mode` (falling back as `place_file` does). The plan's notes and the fallbacks taken are in
/// the report's `notes`.
InstallReport install_wheels(const store::Store& store, const Interpreter& interpreter,
                             const VenvLayout& layout, const std::vector<InstallRequest>& requests,
                             LinkMode mode, unsigned jobs, const LinkOps& ops = LinkOps::system());

}  // namespace envbox::env
