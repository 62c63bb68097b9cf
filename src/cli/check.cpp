// envbox check ENV [--generation N] [--compare N] [--skip MODULE]… [--timeout S] [--jobs N]
#include "envbox/ops/check.hpp"

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/process.hpp"

namespace envbox::cli {
namespace {

struct CheckCommand {
    std::string env;
    int generation = 0;  ///< 0: the current one
    int compare = 0;     ///< 0: none
    std::vector<std::string> skip;
    int timeout = 120;
    int jobs = 0;
    std::string sandbox;
    bool no_sandbox = false;
};

const char* status_name(env::ImportResult::Status s) {
    return s == env::ImportResult::Status::ok       ? "ok"
           : s == env::ImportResult::Status::failed ? "failed"
                                                    : "timeout";
}

Json gpu_json(const env::GpuFigures& g) {
    if (!g.none.empty()) return Json{{"none", g.none}};
    Json archs = Json::array();
    for (const auto& a : g.arch_list)
        archs.push_back(a);
    Json out = {{"device", g.device}, {"capability", g.capability},
                {"arch_list", archs}, {"arch_supported", g.arch_supported()},
                {"torch", g.torch},   {"cuda", g.cuda},
                {"cudnn", g.cudnn},   {"nccl", g.nccl}};
    out["context_bytes"] = g.context_bytes ? Json(*g.context_bytes) : Json();
    out["matmul_tflops"] = g.matmul_tflops ? Json(*g.matmul_tflops) : Json();
    out["failed"] = g.failed.empty() ? Json() : Json(g.failed);
    out["errors"] = g.errors;
    return out;
}

Json record_json(const env::CheckRecord& r) {
    Json imports = Json::array(), caches = Json::array();
    for (const auto& i : r.imports)
        imports.push_back({{"module", i.module},
                           {"status", status_name(i.status)},
                           {"seconds", i.seconds},
                           {"message", i.message}});
    for (const auto& c : r.caches)
        caches.push_back({{"variable", c.variable}, {"files", c.files}, {"bytes", c.bytes}});
    return Json{{"generation", r.generation},    {"when", r.when},           {"python", r.python},
                {"clean", r.findings().empty()}, {"findings", r.findings()}, {"imports", imports},
                {"gpu", gpu_json(r.gpu)},        {"compile_caches", caches}};
}

void print_text(const GlobalOptions& global, const CheckCommand& cmd,
                const ops::CheckResult& result) {
    const env::CheckRecord& r = result.record;
    std::size_t ok = 0;
    double slowest = 0;
    std::string slowest_name;
    for (const auto& i : r.imports) {
        if (i.status == env::ImportResult::Status::ok) ++ok;
        if (i.seconds > slowest) slowest = i.seconds, slowest_name = i.module;
        if (i.status != env::ImportResult::Status::ok || global.verbosity > 0)
            std::printf("import %-32s %-7s %6.2f s%s%s\n", i.module.c_str(), status_name(i.status),
                        i.seconds, i.message.empty() ? "" : "  ", i.message.c_str());
    }
    std::printf("imports: %zu of %zu ok%s\n", ok, r.imports.size(),
                slowest_name.empty() ? ""
                                     : ("; slowest " + slowest_name + " " +
                                        std::to_string(slowest).substr(0, 4) + " s")
                                           .c_str());
    const env::GpuFigures& g = r.gpu;
    if (!g.none.empty()) {
        std::printf("GPU: not measured (%s)\n", g.none.c_str());
    } else {
        std::printf("GPU: %s (%s, torch built for %s)\n", g.device.c_str(), g.capability.c_str(),
                    g.arch_supported() ? "it" : "other architectures");
        std::printf("torch %s, CUDA %s, cuDNN %s, NCCL %s\n", g.torch.c_str(), g.cuda.c_str(),
                    g.cudnn.c_str(), g.nccl.c_str());
        if (g.context_bytes)  // in MiB, as NVML counts and `--compare` compares it
            std::printf("cuda context: %llu MiB\n",
                        static_cast<unsigned long long>((*g.context_bytes + (1u << 19)) >> 20));
        if (g.matmul_tflops) std::printf("bf16 matmul: %.1f TFLOP/s\n", *g.matmul_tflops);
        for (const auto& e : g.errors)
            std::printf("note: %s\n", e.c_str());
    }
    for (const auto& c : r.caches)
        if (c.files > 0 || global.verbosity > 0)
            std::printf("compile cache %s: %s in %s\n", c.variable.c_str(),
                        counted(c.files, "file", "files").c_str(), human_bytes(c.bytes).c_str());
    for (const auto& f : r.findings())  // the imports' are their lines above
        if (!f.starts_with("import ")) std::printf("finding: %s\n", f.c_str());
    if (global.verbosity >= 0)
        std::fprintf(stderr, "%s generation %d: %s; kept as %s\n", cmd.env.c_str(), r.generation,
                     r.findings().empty() ? "clean" : "findings", result.record_path.c_str());
}

void run_check(const GlobalOptions& global, CheckCommand cmd) {
    cmd.env = environment_or_default(global, cmd.env);
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::CheckOptions options;
    if (cmd.generation > 0) options.generation = cmd.generation;
    options.skip = cmd.skip;
    options.timeout = std::chrono::seconds(cmd.timeout);
    options.jobs = cmd.jobs;
    options.sandbox = sandbox_mode(cmd.sandbox, cmd.no_sandbox);
    options.base = current_environment();
    // The generation compared with is read first: a mistyped N costs no check.
    std::optional<env::CheckRecord> before;
    if (cmd.compare > 0) before = ops::kept_check(ctx, cmd.env, cmd.compare);
    if (global.verbosity >= 0 && !global.json)
        std::fprintf(stderr, "checking %s…\n", cmd.env.c_str());
    const ops::CheckResult result = ops::check_environment(ctx, cmd.env, options);
    if (global.verbosity > 0)
        for (const auto& n : result.notes)
            std::fprintf(stderr, "envbox: %s\n", n.c_str());
    if (global.verbosity > 0 || (result.sandbox.starts_with("none") &&
                                 options.sandbox != ops::SandboxMode::off && global.verbosity >= 0))
        std::fprintf(stderr, "envbox: sandbox: %s\n", result.sandbox.c_str());
    std::vector<std::string> changes;
    if (before) changes = ops::compare_checks(*before, result.record);
    if (global.json) {
        Json out = record_json(result.record);
        out["environment"] = cmd.env;
        out["record"] = result.record_path.string();
        if (before) out["compare"] = Json{{"generation", cmd.compare}, {"changes", changes}};
        std::printf("%s\n", json_line(out).c_str());
    } else {
        print_text(global, cmd, result);
        if (before) {
            std::printf("against generation %d:%s\n", cmd.compare,
                        changes.empty() ? " no difference" : "");
            for (const auto& c : changes)
                std::printf("  %s\n", c.c_str());
        }
    }
    const auto findings = result.record.findings();
    if (!findings.empty())
        throw Error(ErrorCode::runtime,
                    cmd.env + " generation " + std::to_string(result.record.generation) + ": " +
                        counted(findings.size(), "finding", "findings") + ": " + findings.front());
}

}  // namespace

void register_check(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<CheckCommand>();
    CLI::App* c = app.add_subcommand(
        "check",
        "Check ENV's runtime: import every module, measure the GPU; keep and compare the record");
    c->add_option("ENV", cmd->env,
                  "Environment (default: $ENVBOX_ENV, else the project's only manifest)");
    c->add_option("--generation", cmd->generation, "Check generation N, not the current one")
        ->check(CLI::Range(1, 999999999));
    c->add_option("--compare", cmd->compare,
                  "Also print what changed since generation N's kept check")
        ->check(CLI::Range(1, 999999999));
    c->add_option("--skip", cmd->skip, "A module (and its submodules) not to import; repeatable");
    c->add_option("--timeout", cmd->timeout, "Seconds each import may take (default 120)")
        ->check(CLI::Range(1, 86400));
    c->add_option("--jobs", cmd->jobs, "Imports at once (default: the cores, at most 8)")
        ->check(CLI::Range(1, 256));
    c->add_option("--sandbox", cmd->sandbox, "auto, strict or off, as for run")
        ->check(CLI::IsMember({"auto", "strict", "off"}));
    c->add_flag("--no-sandbox", cmd->no_sandbox, "Same as --sandbox off");
    c->footer(
        "The check runs as `envbox run` runs a command: the generation's interpreter, run's "
        "environment (its compile caches, [run].env) and sandbox. Its record is kept beside the "
        "generation (envs/<key>/ENV/checks/gen-N); `envbox history ENV` shows each one. It exits "
        "with 9 when a module does not import or torch was not built for the GPU.");
    c->callback([&global, cmd] { run_check(global, *cmd); });
}

}  // namespace envbox::cli
