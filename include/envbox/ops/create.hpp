#pragma once
/// `envbox create ENV`: make an environment match its lock.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envbox/env/build.hpp"
#include "envbox/env/cuda.hpp"
#include "envbox/env/installer.hpp"
#include "envbox/env/link_check.hpp"
#include "envbox/install/fetch.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::ops {

struct CreateOptions {
    std::string env;
    std::optional<std::filesystem::path> lock;  ///< --lock FILE (default manifests/pylock.ENV.toml)
    LinkMode link_mode = LinkMode::hardlink;
    bool offline = false;
    bool no_wait = false;  ///< fail at once when another envbox holds this environment
    bool locked = false;   ///< a missing or stale lock is an error (exit 3), never re-locked
    bool frozen = false;   ///< use the lock as it is, without checking it against the manifest
    /// Build a new generation even when the current one matches the lock, from store objects
    /// verified by content (an object that fails is re-created from its wheel): the repair
    /// for whatever `verify` found.
    bool force = false;
    /// false: no bytecode (--no-compile); nullopt: the manifest's `[install].compile`, else on.
    std::optional<bool> compile;
    /// `--target`: the platform to build for (one of the manifest's `platforms`, or its
    /// machine), instead of this machine's; empty: this machine's (install::create_target).
    std::string target;
    /// --allow-cuda-change: a lock that moves the environment off its current generation's CUDA
    /// line (or torch label) is built; without it that is refused, naming the change, unless
    /// this machine's `lock --allow-cuda-change` wrote those bytes (check_cuda_move).
    bool allow_cuda_change = false;
    /// The command that refusal tells to repeat with --allow-cuda-change (`envbox pull REF
    /// ENV`); empty: `envbox create ENV`.
    std::string retry;
    /// Set by run's sync: a lock that would move the environment off its current generation's
    /// CUDA line (or torch label) is refused (invalid_input) naming the change and the command
    /// that makes it on purpose, before anything is fetched or built.
    bool keep_cuda_line = false;
    /// Called once create has decided to build a new generation (the lock is fresh, no
    /// generation matches, nothing refused), before it fetches: run's sync says "creating…"
    /// here, so it is never said of a create that did not happen.
    std::function<void()> on_build;
    /// The project lock's freshness as the caller already decided it (run's sync): create then
    /// neither decides it again nor reads the lock again when it is used as it is.
    std::optional<Freshness> freshness;
};

struct CreateResult {
    bool changed = false;  ///< false: the current generation already matched
    int generation = 0;
    std::filesystem::path path;  ///< the generation's directory
    std::size_t packages = 0;
    bool relocked = false;  ///< the lock was (re)written first
    std::string python;     ///< "3.11.2 (/usr/bin/python3.11)"
    /// What the fetch did: wheels fetched and repaired, ingest and compile counts, its times.
    install::FetchReport fetch;
    /// What building the generation did: files linked, install, seal and commit times.
    env::BuildReport build;
    /// Seconds: select (read, probe, choose), and the whole create.
    double select_s = 0, seconds = 0;
    /// The link check: native files linked, what it found but did not refuse, its time.
    env::LinkReport link;
};

/// What pull and unpack create from (the artifact rule, docs/SECURITY.md).
struct Received {
    /// The received lock's bytes, taken as the lock at its path (`CreateOptions::lock` or the
    /// project's) without reading that file; the caller writes it there once create returns,
    /// so a failed or interrupted receive leaves the project's lock as it was.
    std::string lock_text;
    /// What the artifact carried: the only source of the wheels the store lacks and of every
    /// build (a wheel it did not carry is an integrity error, exit 5, naming its package, before
    /// anything is fetched or stored).
    install::Received artifact;
};

/// Reads the lock (and the manifest, when there is one, for the target), selects one wheel
/// per package for the target, fetches and ingests what the store lacks (in parallel), builds
/// `gen-N`, stamps it and switches `current` to it, in one install::Transaction whose source is
/// the lock's own or, with `received`, what pull or unpack received. A lock that matches the
/// current generation is a no-op. Errors leave the previous generation current and the store
/// consistent.
CreateResult create(const Context& ctx, const CreateOptions& options,
                    const Received* received = nullptr);

/// Refuses (exit 6) when this machine's NVIDIA driver cannot run the newest of `lines`; with no
/// driver at all, returns the note to show (create shows it, run only with -v). The driver is
/// `settings.cuda_driver` when set (ENVBOX_CUDA_DRIVER), else the installed one.
std::optional<std::string> check_driver(const std::vector<env::CudaLine>& lines,
                                        const Settings& settings);

}  // namespace envbox::ops
