// envbox init ENV [--python X.Y] [--cuda 12.8|13.0|none] [--default-index URL] [--cuda-index URL]
#include "envbox/ops/init.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"

namespace envbox::cli {
namespace {

struct InitCommand {
    std::string env, python, cuda = "none", default_index, cuda_index;
};

void run_init(const GlobalOptions& global, const InitCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    // The project is the one named, else this directory: init starts a project, it does not
    // look for one upward.
    GlobalOptions here = global;
    if (here.project.empty()) here.project = std::filesystem::current_path().string();
    ops::Context ctx = make_context(here, progress);
    ops::InitOptions opt;
    opt.env = cmd.env;
    if (!cmd.python.empty()) opt.python = cmd.python;
    if (cmd.cuda != "none") opt.cuda = cmd.cuda;
    if (!cmd.default_index.empty()) opt.default_index = cmd.default_index;
    if (!cmd.cuda_index.empty()) opt.cuda_index = cmd.cuda_index;
    ops::InitResult r = ops::init(ctx, opt);
    if (global.verbosity < 0) return;
    std::fprintf(stderr, "Detected CPython %s (%s) on %s\n", r.interpreter.full_version.c_str(),
                 r.interpreter.executable.c_str(), r.platform.c_str());
    if (r.cuda)
        std::fprintf(stderr,
                     "CUDA %s: torch, torchvision, torchaudio and triton come from %s only\n",
                     r.cuda->c_str(), r.cuda_index.c_str());
    if (!r.shared_indexes.empty()) {
        std::string names;
        for (const auto& n : r.shared_indexes)
            names += (names.empty() ? "" : ", ") + n;
        std::fprintf(stderr, "Indexes from %s: %s\n", (ctx.project_root / "envbox.toml").c_str(),
                     names.c_str());
    }
    std::fprintf(stderr, "Wrote %s; add requirements to it, then `envbox create %s`\n",
                 r.manifest.c_str(), cmd.env.c_str());
}

}  // namespace

void register_init(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<InitCommand>();
    CLI::App* c = app.add_subcommand(
        "init", "Write manifests/ENV.toml for this machine's interpreter and platform");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("--python", cmd->python,
                  "Interpreter version X.Y (default: the python3 envbox finds)");
    c->add_option("--cuda", cmd->cuda,
                  "CUDA line whose PyTorch index serves the torch family: 12.8, 13.0 or none")
        ->check(CLI::IsMember({"12.8", "13.0", "none"}))
        ->capture_default_str();
    c->add_option("--default-index", cmd->default_index,
                  "URL of the index named pypi, instead of https://pypi.org/simple (a mirror)");
    c->add_option("--cuda-index", cmd->cuda_index,
                  "URL of --cuda's PyTorch index, instead of download.pytorch.org/whl/cuXXX");
    c->callback([&global, cmd] { run_init(global, *cmd); });
}

}  // namespace envbox::cli
