// envbox create ENV
#include "envbox/ops/create.hpp"

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/ops/check.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/json.hpp"

namespace envbox::cli {
namespace {

struct CreateCommand {
    std::string env;
    std::string lock;       ///< --lock, may be empty
    std::string link_mode;  ///< --link-mode, may be empty
    bool locked = false, frozen = false, offline = false, no_wait = false;
    bool force = false;              ///< --force / --reinstall
    bool no_compile = false;         ///< --no-compile
    bool allow_cuda_change = false;  ///< --allow-cuda-change
    std::string target;              ///< --target, may be empty
    CreateFrom from;                 ///< --from REF (with --plain-http, --ca): pull instead
};

void print_json(const CreateCommand& cmd, const ops::CreateResult& r) {
    Json report = {{"environment", cmd.env},
                   {"changed", r.changed},
                   {"generation", r.generation},
                   {"path", r.path.string()},
                   {"packages", r.packages},
                   {"fetched", r.fetch.fetched},
                   {"files", r.build.install.files},
                   {"hardlinked", r.build.install.hardlinked},
                   {"reflinked", r.build.install.reflinked},
                   {"copied", r.build.install.copied},
                   {"generated", r.build.install.generated},
                   {"bytecode", r.build.install.bytecode},
                   {"compiled", r.fetch.bytecode.compiled},
                   {"link", link_json(r.link)},
                   {"seconds", r.seconds}};
    std::printf("%s\n", json_line(report).c_str());
}

void print_text(const GlobalOptions& global, const CreateCommand& cmd, const ops::CreateResult& r) {
    if (!r.changed) {
        std::fprintf(stderr, "%s is up to date (generation %d, %s); nothing to do\n",
                     cmd.env.c_str(), r.generation,
                     counted(r.packages, "package", "packages").c_str());
        return;
    }
    if (r.fetch.repaired > 0)
        std::fprintf(stderr, "Repaired %s whose store objects had been touched\n",
                     counted(r.fetch.repaired, "wheel", "wheels").c_str());
    if (r.fetch.fetched > 0)
        std::fprintf(stderr, "Stored %s (%s unpacked, %s)\n",
                     counted(r.fetch.fetched, "wheel", "wheels").c_str(),
                     human_bytes(r.fetch.ingest.unpacked_bytes).c_str(),
                     counted(r.fetch.ingest.new_objects, "new object", "new objects").c_str());
    if (r.fetch.bytecode.compiled > 0)
        std::fprintf(stderr, "Compiled %zu %s into the store%s\n", r.fetch.bytecode.compiled,
                     r.fetch.bytecode.compiled == 1 ? "module" : "modules",
                     r.fetch.bytecode.compile_failed
                         ? (" (" + std::to_string(r.fetch.bytecode.compile_failed) +
                            " sources did not compile and have no .pyc)")
                               .c_str()
                         : "");
    std::fprintf(stderr, "Installed %s (%s) in %.2f s into %s generation %d\n",
                 counted(r.packages, "package", "packages").c_str(),
                 counted(r.build.install.files, "file", "files").c_str(), r.seconds,
                 cmd.env.c_str(), r.generation);
    if (global.verbosity > 0)
        std::fprintf(stderr,
                     "  %s\n  python %s; %zu hard links, %zu reflinks, %zu copies, %zu written\n",
                     r.path.c_str(), r.python.c_str(), r.build.install.hardlinked,
                     r.build.install.reflinked, r.build.install.copied, r.build.install.generated);
    if (global.verbosity > 1)
        std::fprintf(
            stderr,
            "  seconds: select %.3f, fetch+ingest %.3f, publish %.3f, install %.3f, seal %.3f, "
            "commit %.3f\n",
            r.select_s, r.fetch.ingest_s, r.fetch.publish_s, r.build.install_s, r.build.seal_s,
            r.build.commit_s);
    if (global.verbosity > 1 && r.fetch.fetched > 0)
        std::fprintf(
            stderr, "  ingest thread-seconds: decode %.2f, hash %.2f, write %.2f (%u threads)\n",
            r.fetch.ingest.decode_s, r.fetch.ingest.hash_s, r.fetch.ingest.write_s, r.fetch.jobs);
    if (global.verbosity > 1 && !r.fetch.last_compiled.empty()) {
        auto fixed = [](double v) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.1f", v);
            return std::string(buf);
        };
        std::string line;
        for (const auto& f : r.fetch.last_compiled)
            line += (line.empty() ? "" : "; ") + f.package +
                    (f.stored_at > 0 ? " stored " + fixed(f.stored_at) + " s," : "") +
                    " compiled " + fixed(f.compiled_at) + " s";
        std::fprintf(stderr, "  compiled last: %s (seconds into the fetch)\n", line.c_str());
        std::fprintf(stderr,
                     "  compile thread-seconds: %.2f, %.2f of them waiting on a module an early "
                     "task was compiling\n",
                     r.fetch.bytecode.compile_s, r.fetch.bytecode.compile_wait_s);
    }
    if (global.verbosity > 0 && r.build.install.bytecode > 0)
        std::fprintf(
            stderr, "  bytecode: %zu .pyc files linked, %zu compiled now%s\n",
            r.build.install.bytecode, r.fetch.bytecode.compiled,
            r.fetch.bytecode.compiled
                ? (" (" + std::to_string(r.fetch.bytecode.compile_workers) + " workers, " +
                   std::to_string(r.fetch.bytecode.compile_s).substr(0, 5) + " thread-seconds; " +
                   std::to_string(r.fetch.bytecode.compiled_early) + " by early tasks)")
                      .c_str()
                : "");
}

void run_create(const GlobalOptions& global, const CreateCommand& cmd) {
    if (cmd.locked && cmd.frozen)
        throw Error(ErrorCode::usage,
                    "--locked (refuse a stale lock) and --frozen (do not check the lock) "
                    "contradict each other: give one");
    if (!cmd.from.ref.empty()) {
        CreateFrom from = cmd.from;
        from.env = cmd.env;
        from.link_mode = cmd.link_mode;
        from.allow_cuda_change = cmd.allow_cuda_change;
        from.no_compile = cmd.no_compile;
        from.lock = cmd.lock;  // --lock FILE with --from: the reviewed lock
        return create_from_registry(global, from);
    }
    ConsoleProgress progress(global.verbosity, stderr_is_tty());
    ops::Context ctx = make_context(global, progress);
    ops::CreateOptions opt;
    opt.env = cmd.env;
    if (!cmd.lock.empty()) opt.lock = cmd.lock;
    opt.offline = cmd.offline;
    opt.no_wait = cmd.no_wait;
    opt.locked = cmd.locked;
    opt.frozen = cmd.frozen;
    opt.force = cmd.force;
    opt.allow_cuda_change = cmd.allow_cuda_change;
    if (cmd.no_compile) opt.compile = false;
    opt.target = cmd.target;
    if (cmd.link_mode == "reflink")
        opt.link_mode = LinkMode::reflink;
    else if (cmd.link_mode == "copy")
        opt.link_mode = LinkMode::copy;
    if (cmd.lock.empty()) ops::require_environment_files(ctx, cmd.env);
    ops::CreateResult r = ops::create(ctx, opt);
    progress.clear();
    if (global.json)
        print_json(cmd, r);
    else if (global.verbosity >= 0)
        print_text(global, cmd, r);
    // Where the decision is made: a generation measured before can be measured against.
    if (!global.json && global.verbosity >= 0 && r.changed)
        if (auto before = ops::newest_check_before(ctx, cmd.env, r.generation))
            std::fprintf(stderr,
                         "generation %d was checked: `envbox check %s --compare %d` measures "
                         "generation %d against it\n",
                         *before, cmd.env.c_str(), *before, r.generation);
}

}  // namespace

void register_create(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<CreateCommand>();
    CLI::App* c = app.add_subcommand(
        "create", "Make ENV match its lock: fetch, build a new generation, switch atomically");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_flag("--locked", cmd->locked,
                "Fail (exit 3) if the lock is missing or stale instead of locking");
    c->add_flag("--frozen", cmd->frozen,
                "Use the lock as it is, without checking it against the manifest");
    c->add_option("--lock", cmd->lock,
                  "Install this PEP 751 file instead of the ENV lock (with --from: the reviewed "
                  "lock the artifact's must be)");
    c->add_option("--link-mode", cmd->link_mode, "hardlink, reflink or copy")
        ->check(CLI::IsMember({"hardlink", "reflink", "copy"}));
    c->add_flag("--offline", cmd->offline, "Use only the store and caches");
    c->add_flag("--no-wait", cmd->no_wait,
                "Fail at once if another envbox is building this environment");
    c->add_flag("--force,--reinstall", cmd->force,
                "Build a fresh generation even if up to date, from store objects checked by "
                "content (the repair for what `verify` reports)");
    c->add_flag("--no-compile", cmd->no_compile,
                "Link no .pyc files (default: every module gets its bytecode, compiled once "
                "per store; the manifest's [install] compile = false does the same)");
    c->add_flag("--allow-cuda-change", cmd->allow_cuda_change,
                "Let a lock move ENV to another CUDA line (a teammate's merged lock, a new "
                "artifact); refused otherwise, with the change list");
    c->add_option("--target", cmd->target,
                  "Build for this platform of the manifest's `platforms` (a tag, or its "
                  "machine: aarch64) instead of this machine's");
    c->add_option("--from", cmd->from.ref,
                  "Build from an OCI registry's artifact (REGISTRY/REPOSITORY:TAG) as `envbox "
                  "pull REF ENV` does, with no index asked");
    c->add_flag("--plain-http", cmd->from.plain_http, "With --from: the registry over http://");
    c->add_option("--ca", cmd->from.ca, "With --from: CA bundle for the registry's TLS");
    c->add_flag("--update-lock", cmd->from.update_lock,
                "With --from: take the artifact's lock over a different manifests/pylock.ENV.toml");
    c->add_flag("--ignore-bytecode", cmd->from.ignore_bytecode,
                "With --from: take none of the artifact's .pyc files; compile here");
    c->callback([&global, cmd] { run_create(global, *cmd); });
}

}  // namespace envbox::cli
