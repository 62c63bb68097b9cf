// envbox run ENV -- CMD…
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/env/sandbox.hpp"
#include "envbox/ops/run.hpp"
#include "envbox/util/process.hpp"

namespace envbox::cli {

void run_run(const GlobalOptions& global, const std::string& env, const std::vector<std::string>& command,
             bool no_sandbox) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::RunPlan plan = ops::plan_run(ctx, env, command, current_environment());
    std::string sandbox = "without the sandbox (--no-sandbox)";
    if (!no_sandbox) {
        // The generation and the store read-only for the command; when the kernel does not
        // allow namespaces here, say so (with -v) and run without.
        auto why = env::enter_read_only_sandbox({plan.generation, ctx.home / "store-v1"});
        sandbox = why ? "without the sandbox: " + *why : "in the read-only sandbox";
    }
    if (global.verbosity > 0) {
        std::fprintf(stderr, "envbox: running in %s %s\n", plan.generation.c_str(), sandbox.c_str());
        for (const auto& n : plan.notes) std::fprintf(stderr, "envbox: %s\n", n.c_str());
    }
    std::fflush(nullptr);
    exec_replace(plan.argv, plan.environment);
}

}  // namespace envbox::cli
