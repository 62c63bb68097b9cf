#pragma once
/// The target an environment is locked or built for: one CPython version on one platform, with
/// the wheel tags it runs and the marker environment its locks are evaluated in. Worked out here
/// alone; `lock` and `create` both ask for it.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envbox/env/interpreter.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/pep/marker.hpp"
#include "envbox/pep/tags.hpp"

namespace envbox::install {

struct Target {
    /// The interpreter that will run the environment; absent for a lock, which is resolved for
    /// the manifest's target on any machine without probing one.
    std::optional<env::Interpreter> interpreter;
    int python_major = 3, python_minor = 0;
    /// "3.11.2" (the interpreter's), or "3.11.0" for a manifest's target.
    std::string python_full_version;
    /// The best platform tag ("manylinux_2_28_x86_64").
    std::string platform;
    /// The ranked tags of CPython major.minor (free-threaded when the interpreter is) on
    /// `platform`.
    pep::TargetTags tags{std::vector<pep::Tag>{}};
    /// The marker variables locks and metadata are evaluated against: the interpreter's own,
    /// or those CPython `python_full_version` on Linux `machine()` would report.
    pep::MarkerEnvironment markers;

    /// "x86_64" or "aarch64" from the end of `platform`; "" for any other platform.
    std::string machine() const;
};

/// The target a manifest names (`python = "3.N"`, `platform`), as `lock` resolves for it: CPython
/// 3.N.0, its markers `MarkerEnvironment::linux_cpython`, tags `Manifest::target_tags`. Throws
/// the tags' error for a platform that is not a target. With `platforms`, the first.
Target target_of_manifest(const lock::Manifest& manifest);

/// Every target a manifest names, one per entry of `platforms` in its order, each as
/// `target_of_manifest` builds it for that platform.
std::vector<Target> targets_of_manifest(const lock::Manifest& manifest);

/// The marker true on `target` alone among a lock's targets (which differ in machine):
/// `platform_machine == 'aarch64'`.
std::string target_marker(const Target& target);

/// The platform tag of the machine `interpreter` runs on: `manylinux_<glibc>_<machine>` (the
/// machine from the interpreter's `platform_machine`, x86_64 when it reports none). Throws
/// invalid_input, naming `env`'s manifest as the way out, when the interpreter has no glibc.
std::string interpreter_platform(const env::Interpreter& interpreter, const std::string& env);

/// The target of a probed interpreter on `platform` (the manifest's), or on `interpreter_platform`
/// when `platform` is empty: the interpreter's version, markers and free-threading decide the rest.
Target target_of_interpreter(env::Interpreter interpreter, const std::string& platform,
                             const std::string& env);

/// The target `create` builds for: with a manifest, its CPython 3.N (the first interpreter
/// found, `env::find_interpreter`) on its platform — of several `platforms`, the one of this
/// machine's machine (`interpreter_platform`), and none is an error (invalid_input) naming the
/// platforms the manifest covers; without one (a bare `--lock`), the default interpreter on this
/// machine's platform. `platform`, when not empty (`create --target`), is the target instead of
/// this machine's: it must be one of the manifest's platforms (matched whole, or by machine:
/// "aarch64"), and the markers say its machine, so the lock's entries for that target are the
/// ones selected. Probes are cached under `probe_cache`; `search` says where interpreters are
/// looked for.
Target create_target(const lock::Manifest* manifest, const std::filesystem::path& probe_cache,
                     const std::string& env, const env::InterpreterSearch& search,
                     const std::string& platform = "");

/// The platform `create` builds `manifest` for on a machine of platform `host`: `wanted`
/// (`--target`) when given, which must name one of its platforms (else a usage error naming
/// them); else its only platform, whatever the host; else the one of the host's machine, and
/// none is an error (invalid_input) naming the platforms it covers.
std::string platform_for_host(const lock::Manifest& manifest, const std::string& host,
                              const std::string& wanted, const std::string& env);

/// The target `target` of `lock`: a platform its `[tool.envbox]` records (`platforms`, or
/// `platform`), whole or by machine ("aarch64"), as CPython `python`.0 there (tags and markers,
/// no interpreter). A target the lock does not record is a usage error naming those it does.
Target lock_target(const lock::LockFile& lock, const std::string& target);

/// `lock` as its target `target` sees it (`--target` of tree, why, export, diff): the packages
/// kept are those whose marker holds for that target (`lock_target`, `lock::for_target`).
lock::Pylock lock_for_target(const lock::LockFile& lock, const std::string& target);

/// The platform of `platforms` that `wanted` names: the same tag, or its machine alone
/// ("aarch64"); nullopt when none does.
std::optional<std::string> platform_named(const std::vector<std::string>& platforms,
                                          const std::string& wanted);

}  // namespace envbox::install
