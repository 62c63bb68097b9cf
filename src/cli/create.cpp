// envbox create ENV
#include "envbox/ops/create.hpp"

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/util/error.hpp"

namespace envbox::cli {

void run_create(const GlobalOptions& global, const CreateArgs& args) {
    if (args.locked && args.frozen)
        throw Error(ErrorCode::usage,
                    "--locked (refuse a stale lock) and --frozen (do not check the lock) "
                    "contradict each other: give one");
    ConsoleProgress progress(global.verbosity, stderr_is_tty());
    ops::Context ctx = make_context(global, progress);
    ops::CreateOptions opt;
    opt.env = args.env;
    if (!args.lock.empty()) opt.lock = args.lock;
    opt.offline = args.offline;
    opt.no_wait = args.no_wait;
    opt.locked = args.locked;
    opt.frozen = args.frozen;
    opt.force = args.force;
    if (args.link_mode == "reflink")
        opt.link_mode = LinkMode::reflink;
    else if (args.link_mode == "copy")
        opt.link_mode = LinkMode::copy;
    ops::CreateResult r = ops::create(ctx, opt);
    progress.clear();
    if (global.json) {
        std::printf(
            "{\"environment\": %s, \"changed\": %s, \"generation\": %d, \"path\": %s, "
            "\"packages\": %zu, \"fetched\": %zu, \"files\": %zu, \"hardlinked\": %zu, "
            "\"reflinked\": %zu, \"copied\": %zu, \"generated\": %zu, \"seconds\": %.3f}\n",
            json_quote(args.env).c_str(), r.changed ? "true" : "false", r.generation,
            json_quote(r.path.string()).c_str(), r.packages, r.fetched, r.install.files,
            r.install.hardlinked, r.install.reflinked, r.install.copied, r.install.generated,
            r.seconds);
        return;
    }
    if (global.verbosity < 0) return;
    if (!r.changed) {
        std::fprintf(stderr, "%s is up to date (generation %d, %zu packages); nothing to do\n",
                     args.env.c_str(), r.generation, r.packages);
        return;
    }
    if (r.repaired > 0)
        std::fprintf(stderr, "Repaired %zu wheels whose store objects had been touched\n",
                     r.repaired);
    if (r.fetched > 0)
        std::fprintf(stderr, "Stored %zu wheels (%s unpacked, %llu new objects)\n", r.fetched,
                     human_bytes(r.ingest.unpacked_bytes).c_str(),
                     static_cast<unsigned long long>(r.ingest.new_objects));
    std::fprintf(stderr, "Installed %zu packages (%zu files) in %.2f s into %s generation %d\n",
                 r.packages, r.install.files, r.seconds, args.env.c_str(), r.generation);
    if (global.verbosity > 0)
        std::fprintf(stderr,
                     "  %s\n  python %s; %zu hard links, %zu reflinks, %zu copies, %zu written\n",
                     r.path.c_str(), r.python.c_str(), r.install.hardlinked, r.install.reflinked,
                     r.install.copied, r.install.generated);
    if (global.verbosity > 1)
        std::fprintf(
            stderr,
            "  seconds: select %.3f, fetch+ingest %.3f, publish %.3f, install %.3f, commit %.3f\n",
            r.select_s, r.ingest_s, r.publish_s, r.install_s, r.commit_s);
    if (global.verbosity > 1 && r.fetched > 0)
        std::fprintf(stderr,
                     "  ingest thread-seconds: decode %.2f, hash %.2f, write %.2f (%u threads)\n",
                     r.ingest.decode_s, r.ingest.hash_s, r.ingest.write_s, r.jobs);
}

}  // namespace envbox::cli
