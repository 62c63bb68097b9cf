#include "envbox/env/build.hpp"

#include "envbox/env/venv.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/stopwatch.hpp"

namespace envbox::env {

BuildReport build_generation(const store::Store& store, const Interpreter& interpreter,
                             Generation& gen, const std::filesystem::path& env_dir,
                             const std::vector<InstallRequest>& requests, const BuildOptions& opt) {
    BuildReport report;
    Stopwatch lap;
    try {
        VenvLayout layout = create_venv(interpreter, gen.path, opt.env, gen.packages);
        gen.pip_shim = wants_pip_shim(gen.packages);
        report.install =
            install_wheels(store, interpreter, layout, requests, opt.link_mode, opt.jobs);
        write_generation_record(gen, opt.lock_text);
        report.install_s = lap.lap();
        seal_generation(gen.path, report.install.dirs, opt.jobs);
        report.install.dirs.clear();
        report.seal_s = lap.lap();
        stamp_complete(gen.path);
        switch_current(env_dir, gen.number);
        report.commit_s = lap.lap();
    } catch (Error& e) {
        try {
            remove_own_tree(env_dir, gen.path);
        } catch (const Error&) {  // the error that matters is the one being reported
        }
        e.add_context("building " + opt.env + " generation " + std::to_string(gen.number));
        throw;
    }
    return report;
}

}  // namespace envbox::env
