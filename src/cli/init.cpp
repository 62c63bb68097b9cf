// envbox init ENV [--python X.Y] [--cuda 12.8|13.0|none] [--platform TAG] [--default-index URL]
//                 [--cuda-index URL]
#include "envbox/ops/init.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"

namespace envbox::cli {
namespace {

struct InitCommand {
    std::string env, python, cuda = "none", default_index, cuda_index, platform, from;
    bool platform_given = false;  ///< `--platform ""` is a tag the manifest refuses, not none
};

// Where the lock-diff line went, and the `git config` each clone needs for it.
void report_lock_diff(const ops::InitResult& r) {
    using ops::LockDiffAttribute;
    if (r.lock_diff == LockDiffAttribute::refused) {
        std::fprintf(stderr,
                     "warning: %s left alone (%s); lock diffs through envbox need the line `%s` "
                     "there and, once in each clone, `%s`\n",
                     r.gitattributes.c_str(), r.lock_diff_problem.c_str(), ops::kLockDiffAttribute,
                     ops::kLockDiffGitConfig);
        return;
    }
    if (r.lock_diff == LockDiffAttribute::added)
        std::fprintf(stderr, "Added `%s` to %s (git diffs locks through envbox)",
                     ops::kLockDiffAttribute, r.gitattributes.c_str());
    else
        std::fprintf(stderr, "%s has `%s`", r.gitattributes.c_str(), ops::kLockDiffAttribute);
    std::fprintf(stderr, "; once in each clone:\n  %s\n", ops::kLockDiffGitConfig);
}

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
    if (cmd.platform_given) opt.platform = cmd.platform;
    if (!cmd.from.empty()) opt.from = std::filesystem::absolute(cmd.from);
    ops::InitResult r = ops::init(ctx, opt);
    if (global.verbosity < 0) return;
    std::fprintf(stderr, "Detected CPython %s (%s)\n", r.interpreter.full_version.c_str(),
                 r.interpreter.executable.c_str());
    std::fprintf(stderr, "%s\n", r.platform_note.c_str());
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
    for (const auto& what : r.untranslated)
        std::fprintf(stderr, "note: not translated: %s\n", what.c_str());
    if (opt.from)
        std::fprintf(stderr, "Wrote %s with %zu requirements from %s; then `envbox create %s`\n",
                     r.manifest.c_str(), r.imported, opt.from->c_str(), cmd.env.c_str());
    else
        std::fprintf(stderr, "Wrote %s; add requirements to it, then `envbox create %s`\n",
                     r.manifest.c_str(), cmd.env.c_str());
    report_lock_diff(r);
}

}  // namespace

void register_init(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<InitCommand>();
    CLI::App* c = app.add_subcommand(
        "init",
        "Write manifests/ENV.toml for this machine's interpreter, and the lock-diff line of "
        ".gitattributes");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("--python", cmd->python,
                  "Interpreter version X.Y (default: the python3 envbox finds)");
    c->add_option("--cuda", cmd->cuda,
                  "CUDA line whose PyTorch index serves the torch family: 12.8, 13.0 or none")
        ->check(CLI::IsMember({"12.8", "13.0", "none"}))
        ->capture_default_str();
    CLI::Option* platform =
        c->add_option("--platform", cmd->platform,
                      "Platform tag to lock for (default: manylinux_2_28_ARCH, PyTorch's floor, or "
                      "this machine's manylinux_GLIBC_ARCH where its glibc is older)");
    c->add_option("--default-index", cmd->default_index,
                  "URL of the index named pypi, instead of https://pypi.org/simple (a mirror)");
    c->add_option("--cuda-index", cmd->cuda_index,
                  "URL of --cuda's PyTorch index, instead of download.pytorch.org/whl/cuXXX");
    c->add_option("--from", cmd->from,
                  "A requirements file (-r/-c/-e/--index-url followed) or a pyproject.toml (the "
                  "project, editable) to take the requirements from; what has no manifest "
                  "setting is named");
    c->callback([&global, cmd, platform] {
        cmd->platform_given = platform->count() > 0;
        run_init(global, *cmd);
    });
}

}  // namespace envbox::cli
