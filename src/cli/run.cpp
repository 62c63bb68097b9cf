// envbox run ENV -- CMD…
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/ops/run.hpp"
#include "envbox/util/process.hpp"

namespace envbox::cli {

void run_run(const GlobalOptions& global, const std::string& env, const std::vector<std::string>& command,
             bool no_sandbox) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::RunPlan plan = ops::plan_run(ctx, env, command, current_environment());
    if (global.verbosity > 0) {
        std::fprintf(stderr, "envbox: running in %s%s\n", plan.generation.c_str(),
                     no_sandbox ? "" : " (sandbox not in this build: running without it)");
        for (const auto& n : plan.notes) std::fprintf(stderr, "envbox: %s\n", n.c_str());
    }
    std::fflush(nullptr);
    exec_replace(plan.argv, plan.environment);
}

}  // namespace envbox::cli
