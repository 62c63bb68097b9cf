// envbox cache clean [--all] [--dry-run], envbox cache prune [--dry-run]
#include "envbox/ops/cache.hpp"

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"

namespace envbox::cli {
namespace {

struct CacheCommand {
    bool all = false;
    bool dry_run = false;
};

void report(const GlobalOptions& global, const ops::CacheResult& r, bool dry_run,
            const char* nothing) {
    if (global.json) {
        Json buckets = Json::object();
        for (const auto& b : r.buckets)
            buckets[b.name] = {{"entries", b.entries}, {"bytes", b.bytes}};
        Json report = {{"dry_run", dry_run},
                       {"entries_removed", r.entries()},
                       {"bytes_freed", r.bytes()},
                       {"buckets", buckets},
                       {"busy", r.busy}};
        std::printf("%s\n", json_line(report).c_str());
        return;
    }
    if (global.verbosity < 0) return;
    for (const auto& b : r.busy)
        std::fprintf(stderr, "note: kept %s: a download is writing it\n", b.c_str());
    if (global.verbosity > 0)
        for (const auto& b : r.buckets)
            if (b.entries)
                std::fprintf(stderr, "  %s: %s, %s\n", b.name.c_str(),
                             counted(b.entries, "entry", "entries").c_str(),
                             human_bytes(b.bytes).c_str());
    if (r.entries() == 0) {
        std::fprintf(stderr, "%s\n", nothing);
        return;
    }
    std::fprintf(stderr, "%s %s (%s)\n", dry_run ? "Would remove" : "Removed",
                 counted(r.entries(), "cache entry", "cache entries").c_str(),
                 human_bytes(r.bytes()).c_str());
}

void run_clean(const GlobalOptions& global, const CacheCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    report(global, ops::clean_cache(ctx, {cmd.dry_run, cmd.all}), cmd.dry_run,
           "No cache entries to remove");
}

void run_prune(const GlobalOptions& global, const CacheCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    report(global, ops::prune_cache(ctx, {cmd.dry_run, false}), cmd.dry_run,
           "No stale cache entries to remove");
}

}  // namespace

void register_cache(CLI::App& app, GlobalOptions& global) {
    CLI::App* cache = app.add_subcommand(
        "cache", "Remove cached index pages, metadata, downloads and interpreter probes");
    cache->require_subcommand(1);
    cache->footer(
        "The cache is HOME/cache: http/ (index pages), metadata/ (PEP 658 metadata), downloads/ "
        "(wheels before ingest), interpreters/ (probes), compile/<project>.<ENV>/ (torch.compile "
        "and Triton caches). Environments and the store are never touched; `envbox gc` sweeps "
        "those. Both commands wait for running creates (the store lock) and skip a wheel a "
        "download is writing.");

    auto clean = std::make_shared<CacheCommand>();
    CLI::App* c = cache->add_subcommand(
        "clean",
        "Remove everything in the cache except the environments' compile caches (--all: those "
        "too)");
    c->add_flag("--all", clean->all,
                "Also remove cache/compile/ (torch.compile and Triton caches of every "
                "environment; they are rebuilt on the next compile, which can take minutes)");
    c->add_flag("--dry-run", clean->dry_run, "Report what would be removed, remove nothing");
    c->callback([&global, clean] { run_clean(global, *clean); });

    auto prune = std::make_shared<CacheCommand>();
    CLI::App* p = cache->add_subcommand(
        "prune",
        "Remove only stale or unused cache entries: unfinished downloads, downloaded wheels the "
        "store already holds, index pages past their max-age, probes of interpreters that are "
        "gone or changed, compile caches of environments that no longer exist");
    p->add_flag("--dry-run", prune->dry_run, "Report what would be removed, remove nothing");
    p->callback([&global, prune] { run_prune(global, *prune); });
}

}  // namespace envbox::cli
