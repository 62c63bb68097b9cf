// envbox doctor
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/ops/doctor.hpp"

namespace envbox::cli {

void run_doctor(const GlobalOptions& global) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto r = ops::doctor(ctx);
    std::printf("interpreters:\n");
    if (r.interpreters.empty()) std::printf("  none found (install Python, or set ENVBOX_PYTHON)\n");
    for (const auto& i : r.interpreters) std::printf("  %s\n", i.c_str());
    if (r.driver) {
        std::printf("NVIDIA driver: %s, runs CUDA", r.driver->c_str());
        for (const auto& l : r.cuda_lines) std::printf(" %s", l.c_str());
        std::printf("%s\n", r.cuda_lines.empty() ? " (no line envbox knows)" : "");
    } else {
        std::printf("NVIDIA driver: none found (CUDA environments build, but find no GPU here)\n");
    }
    std::printf("store: %s on %s, %s free; placing files: %s\n", r.store_path.c_str(), r.store_filesystem.c_str(),
                human_bytes(r.store_free).c_str(), r.link_mode.c_str());
    std::printf("run sandbox: %s%s\n", r.sandbox.c_str(),
                r.sandboxed ? "" : "; `envbox run` warns and runs unsandboxed (--sandbox strict refuses)");
    if (!r.indexes.empty()) std::printf("indexes:\n");
    for (const auto& i : r.indexes) std::printf("  %s\n", i.c_str());
}

}  // namespace envbox::cli
