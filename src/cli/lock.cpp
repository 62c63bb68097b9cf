// envbox lock ENV…
#include "envbox/ops/lock.hpp"

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/util/error.hpp"

namespace envbox::cli {

void run_lock(const GlobalOptions& global, const std::vector<std::string>& envs, bool check,
              bool upgrade, const std::vector<std::string>& upgrade_packages, bool offline,
              bool allow_mixed_cuda) {
    ConsoleProgress progress(global.verbosity, stderr_is_tty());
    ops::Context ctx = make_context(global, progress);
    std::vector<std::string> stale;
    for (const auto& env : envs) {
        ops::LockOptions opt{env, check, upgrade, upgrade_packages, offline, allow_mixed_cuda};
        ops::LockResult r = ops::lock(ctx, opt);
        progress.clear();
        if (check) {
            if (r.stale) {
                stale.push_back(env);
                std::fprintf(stderr, "%s: the lock is stale:\n", env.c_str());
                for (const auto& why : r.reasons)
                    std::fprintf(stderr, "  %s\n", why.c_str());
            } else if (global.verbosity >= 0) {
                std::fprintf(stderr, "%s: the lock is up to date\n", env.c_str());
            }
            continue;
        }
        if (r.up_to_date && !global.json) {
            if (global.verbosity >= 0)
                std::fprintf(
                    stderr,
                    "%s: the lock is up to date (%zu packages); `--upgrade` resolves again\n",
                    env.c_str(), r.packages);
            continue;
        }
        if (global.json) {
            std::printf(
                "{\"environment\": %s, \"lock\": %s, \"changed\": %s, \"up_to_date\": %s, "
                "\"packages\": %zu, \"seconds\": %.3f, "
                "\"requests\": %llu, \"cache_hits\": %llu, \"peak_in_flight\": %d}\n",
                json_quote(env).c_str(), json_quote(r.lock_path.string()).c_str(),
                r.changed ? "true" : "false", r.up_to_date ? "true" : "false", r.packages,
                r.seconds, static_cast<unsigned long long>(r.requests),
                static_cast<unsigned long long>(r.cache_hits), r.peak_in_flight);
        } else if (global.verbosity >= 0) {
            std::fprintf(stderr,
                         "%s %s: %zu packages in %.2f s (%llu requests, %llu answered from the "
                         "cache, up to %d in flight)\n",
                         r.changed ? "Locked" : "Lock unchanged for", env.c_str(), r.packages,
                         r.seconds, static_cast<unsigned long long>(r.requests),
                         static_cast<unsigned long long>(r.cache_hits), r.peak_in_flight);
        }
    }
    if (!stale.empty())
        throw Error(ErrorCode::invalid_input,
                    std::to_string(stale.size()) + " stale lock(s); run `envbox lock` to update");
}

}  // namespace envbox::cli
