#include "envbox/ops/run.hpp"

#include <algorithm>
#include <set>

#include "envbox/env/confine.hpp"
#include "envbox/env/cuda.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/env/interpreter.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/ops/create.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/ops/lock_agreement.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

// LD_LIBRARY_PATH entries holding CUDA libraries would shadow the ones the environment's wheels
// ship (nvidia/*/lib): they are dropped, everything else kept.
void drop_shadowing_cuda_libraries(std::map<std::string, std::string>& base, RunPlan& plan) {
    auto ld = base.find("LD_LIBRARY_PATH");
    if (ld == base.end()) return;
    std::string kept;
    std::string_view rest = ld->second;
    while (true) {
        auto colon = rest.find(':');
        std::string dir(rest.substr(0, colon));
        bool shadows = false;
        std::error_code ec;
        if (!dir.empty() && fs::is_directory(dir, ec))
            for (const auto& e : fs::directory_iterator(dir, ec)) {
                std::string n = e.path().filename().string();
                for (const char* lib :
                     {"libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn.so", "libnccl.so",
                      "libcusparse.so", "libcufft.so", "libnvrtc.so"})
                    if (n.starts_with(lib)) shadows = true;
                if (shadows) break;
            }
        if (shadows)
            plan.notes.push_back("removed " + dir +
                                 " from LD_LIBRARY_PATH (its CUDA libraries would "
                                 "shadow the environment's)");
        else if (!dir.empty())
            kept += (kept.empty() ? "" : ":") + dir;
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
    }
    if (kept.empty())
        base.erase(ld);
    else
        ld->second = kept;
}

// The run-time compile caches envbox keeps per environment and build (docs/ARCHITECTURE.md,
// "Isolation"): when the environment holds one of `packages`, each variable points into
// `<build>/<folder>`. Each library's own key is in the comment: those that key by less than
// the torch build and CUDA line would load another environment's native code.
struct CompileCache {
    std::vector<const char*> packages;  // normalised names; any of them present
    std::vector<const char*> variables;
    const char* folder;
};
const std::vector<CompileCache>& compile_caches() {
    static const std::vector<CompileCache> table = {
        // Inductor keys by torch's sources, GPU and CUDA; Triton by its version and ptxas.
        {{"torch"}, {"TORCHINDUCTOR_CACHE_DIR"}, "inductor"},
        {{"torch", "triton", "pytorch-triton"}, {"TRITON_CACHE_DIR"}, "triton"},
        // torch.utils.cpp_extension: a set variable drops its py/cuda subfolder; no torch key.
        {{"torch"}, {"TORCH_EXTENSIONS_DIR"}, "torch_extensions"},
        // FlashInfer: its version and GPU archs only (no CUDA, torch or tvm-ffi version).
        {{"flashinfer-python", "flashinfer"}, {"FLASHINFER_WORKSPACE_BASE"}, "flashinfer"},
        // tvm-ffi's torch addon: torch major.minor before 0.1.13.
        {{"apache-tvm-ffi"}, {"TVM_FFI_CACHE_DIR"}, "tvm-ffi"},
        // DeepGEMM (DG_CACHE_DIR in early releases); SGLang overwrites it with its own.
        {{"deep-gemm", "deep_gemm", "sgl-deep-gemm"},
         {"DG_JIT_CACHE_DIR", "DG_CACHE_DIR"},
         "deep_gemm"},
        {{"sglang"}, {"SGLANG_CACHE_DIR"}, "sglang"},
        {{"sglang"}, {"SGLANG_JIT_CACHE_DIR"}, "sglang/jit"},
        {{"sglang"}, {"SGLANG_DG_CACHE_DIR"}, "sglang/deep_gemm"},
        // TileLang: its version, target and flags; no CUDA or torch version.
        {{"tilelang"}, {"TILELANG_CACHE_DIR"}, "tilelang"},
        {{"cupy", "cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x"}, {"CUPY_CACHE_DIR"}, "cupy"},
        {{"numba"}, {"NUMBA_CACHE_DIR"}, "numba"},
        // JAX's persistent cache is off until a folder is named: envbox names one.
        {{"jax"}, {"JAX_COMPILATION_CACHE_DIR"}, "jax"},
        // vLLM's root holds its torch.compile caches; it overrides Inductor's and Triton's.
        {{"vllm"}, {"VLLM_CACHE_ROOT"}, "vllm"},
    };
    return table;
}

// The build the caches are kept for: torch's version (its local label names the CUDA line), a
// torch without a label with the environment's newest CUDA line, else that line, else "cpu".
std::string compile_build(const std::vector<env::GenerationPackage>& packages,
                          const std::vector<env::CudaLine>& lines) {
    std::optional<env::CudaLine> newest;
    for (const auto& l : lines)
        if (!newest || l.major > newest->major ||
            (l.major == newest->major && l.minor && !newest->minor))
            newest = l;
    for (const auto& p : packages)
        if (p.name == "torch")
            return "torch-" + p.version +
                   (p.version.find('+') == std::string::npos && newest ? "+cuda" + newest->str()
                                                                       : "");
    return newest ? "cuda" + newest->str() : "cpu";
}

// Points each compile cache of `compile_caches` the environment holds (and CUDA's own PTX
// cache, for a CUDA environment) at its folder, unless the calling environment sets the
// variable (or [run].env does, after this). The environment's cache folder is the one place in
// the home the sandbox leaves writable, so it is made here, before the sandbox is entered.
void add_compile_caches(const Context& ctx, const std::string& env,
                        const std::vector<env::GenerationPackage>& packages,
                        const std::vector<env::CudaLine>& lines,
                        std::map<std::string, std::string>& base, RunPlan& plan) {
    std::set<std::string> held;
    for (const auto& p : packages)
        held.insert(pep::canonicalize_name(p.name));
    std::vector<std::pair<const char*, std::string>> wanted;  // variable, folder
    for (const auto& c : compile_caches())
        if (std::any_of(c.packages.begin(), c.packages.end(),
                        [&](const char* n) { return held.count(n); }))
            for (const char* v : c.variables)
                wanted.emplace_back(v, c.folder);
    if (!lines.empty()) wanted.emplace_back("CUDA_CACHE_PATH", "cuda");
    if (wanted.empty()) return;
    const fs::path env_caches = store::Home(ctx.home).compile_cache(project_key(ctx), env);
    const fs::path dir = env_caches / compile_build(packages, lines);
    for (const auto& [variable, folder] : wanted) {
        if (base.count(variable)) {
            plan.notes.push_back(std::string("kept ") + variable + " as set");
            continue;
        }
        try {  // writable inside the sandbox: made without following a link planted in the home
            (void)make_own_dir_at_path(ctx.home, dir / folder);
        } catch (const Error& e) {
            if (e.code() == ErrorCode::integrity) throw;  // a link; else a read-only home
        }
        base[variable] = (dir / folder).string();
        plan.compile_caches.emplace_back(variable, dir / folder);
        plan.notes.push_back(std::string("set ") + variable + "=" + base[variable]);
    }
    plan.writable.push_back(env_caches);
}

// The manifest's [run].env, last, so it wins.
void add_manifest_run_env(const Context& ctx, const std::string& env,
                          std::map<std::string, std::string>& base, RunPlan& plan) {
    if (ctx.project_root.empty()) return;
    fs::path manifest = ctx.project().manifest(env);
    std::error_code ec;
    if (!fs::exists(manifest, ec)) return;
    const lock::Manifest m = read_manifest(manifest);
    for (const auto& [k, v] : m.run_env) {
        base[k] = v;
        plan.notes.push_back("set " + k + " from [run].env");
    }
}

// The plan for `gen`, which the caller holds (env::hold_generation).
RunPlan plan_held(const Context& ctx, const std::string& env, const env::Generation& gen,
                  std::vector<std::string> argv, std::map<std::string, std::string> base) {
    std::vector<env::CudaLine> lines;
    for (const auto& p : gen.packages)
        if (auto v = pep::Version::try_parse(p.version))
            if (auto l = env::cuda_line_of(p.name, *v)) lines.push_back(*l);
    RunPlan plan;
    // A machine without a driver is only a -v note here: a CPU job must not find envbox's
    // remark on its stderr at every run (create and doctor say it).
    if (auto note = check_driver(lines, ctx.settings)) plan.notes.push_back(*note);
    plan.generation = gen.path;
    plan.argv = std::move(argv);
    for (const char* drop : {"PYTHONPATH", "PYTHONHOME", "__PYVENV_LAUNCHER__"}) {
        if (base.erase(drop)) plan.notes.push_back(std::string("removed ") + drop);
    }
    if (!lines.empty()) drop_shadowing_cuda_libraries(base, plan);
    add_compile_caches(ctx, env, gen.packages, lines, base, plan);
    base["PYTHONNOUSERSITE"] = "1";
    base["VIRTUAL_ENV"] = gen.path.string();
    base.erase("VIRTUAL_ENV_PROMPT");
    auto path = base.find("PATH");
    std::string bin = (gen.path / "bin").string();
    base["PATH"] = path == base.end() || path->second.empty()
                       ? bin + ":/usr/local/bin:/usr/bin:/bin"
                       : bin + ":" + path->second;
    add_manifest_run_env(ctx, env, base, plan);
    plan.environment = std::move(base);
    try {  // the probe is cached: a read, unless the interpreter changed
        plan.base_installation =
            env::probe_interpreter(gen.python, store::Home(ctx.home).interpreters()).installation;
    } catch (const Error& e) {
        plan.notes.push_back(std::string("the base interpreter stays writable: ") + e.what());
    }
    return plan;
}

}  // namespace

RunPlan plan_run(const Context& ctx, const std::string& env, std::vector<std::string> argv,
                 std::map<std::string, std::string> base) {
    check_env_name(env);
    if (argv.empty())
        throw Error(ErrorCode::usage, "no command given: envbox run " + env + " -- CMD [ARGS…]");
    require_known_environment(ctx, env);
    // Held (a shared lock inherited across the exec) so that gc keeps it while the command lives.
    auto gen = env::hold_current_generation(env_dir(ctx, env));
    if (!gen)
        throw Error(ErrorCode::generic,
                    "environment '" + env + "' has not been created" +
                        (ctx.project_root.empty() ? std::string()
                                                  : " for project " + ctx.project_root.string()) +
                        "; run `envbox create " + env + "` first");
    return plan_held(ctx, env, *gen, std::move(argv), std::move(base));
}

RunPlan plan_run_in(const Context& ctx, const std::string& env, int generation,
                    std::vector<std::string> argv, std::map<std::string, std::string> base) {
    check_env_name(env);
    require_known_environment(ctx, env);
    const fs::path dir = env_dir(ctx, env) / env::generation_dir_name(generation);
    std::optional<env::Generation> gen = env::read_generation(dir);
    if (gen && gen->complete) gen = env::hold_generation(*gen);
    if (!gen || !gen->complete)
        throw Error(ErrorCode::generic, "environment '" + env + "' has no complete generation " +
                                            std::to_string(generation) + " (`envbox history " +
                                            env + "` lists them)");
    return plan_held(ctx, env, *gen, std::move(argv), std::move(base));
}

env::SandboxOutcome enter_run_sandbox(const Context& ctx, const RunPlan& plan, SandboxMode mode) {
    if (mode == SandboxMode::off) return {};
    env::SandboxOutcome out = env::enter_sandbox({ctx.home, plan.writable, plan.base_installation});
    if (out.kind == env::SandboxKind::none && mode == SandboxMode::strict)
        throw Error(ErrorCode::generic,
                    "refusing to run without the sandbox (--sandbox strict): no mount namespace (" +
                        out.namespace_refused + ") and no Landlock (" + out.landlock_refused + ")");
    if (out.kind != env::SandboxKind::none)
        if (auto why = env::drop_workload_capabilities(plan.keep_capabilities))
            throw Error(ErrorCode::generic,
                        "refusing to run as root with the power to undo the sandbox: " + *why);
    return out;
}

SyncPlan plan_sync(const Context& ctx, const std::string& env) {
    SyncPlan plan;
    std::error_code ec;
    const fs::path manifest = ctx.project().manifest(env), lock_path = ctx.project().lock(env);
    // No manifest: run says what is missing, or runs a generation made from --lock FILE.
    if (ctx.project_root.empty() || !fs::exists(manifest, ec)) return plan;
    auto& reasons = plan.reasons;
    plan.freshness = freshness(manifest, lock_path);
    if (plan.freshness->needs_lock()) reasons = plan.freshness->reasons;
    plan.stale_lock = !reasons.empty();
    // The lock's bytes as freshness read them: one read of the file for the whole decision.
    const std::string* text = plan.freshness->lock ? &plan.freshness->lock->text : nullptr;
    const LockAgreement a = lock_agreement(ctx.project_root, env_dir(ctx, env), env, text);
    if (!a.current) {
        reasons.push_back("no generation was ever created");
        plan.what = " has no generation yet";
        return plan;
    }
    const std::string cur = std::to_string(*a.current), file = lock_path.filename().string();
    // A stale lock's reasons are create's notes as it locks; the others are said here.
    if (plan.stale_lock) {
        plan.what = " changed since generation " + cur;
    } else if (a.other_source) {
        if (!a.project_generation || a.lock_generation) return plan;
        const std::string p = std::to_string(*a.project_generation);
        reasons.push_back(file + " changed since generation " + p);
        plan.what = " changed since generation " + p + " (" + reasons.front() + ")";
    } else if (a.agrees) {
        return plan;
    } else if (a.lock_generation && *a.lock_generation > *a.current) {
        const std::string n = std::to_string(*a.lock_generation);
        plan.note = a.summary() + ": run keeps generation " + cur +
                    " until they agree (revert the lock in git, `envbox rollback " + env +
                    " --to " + cur + " --write-lock`, or `envbox rollback " + env + " --to " + n +
                    "`)";
    } else if (a.lock_generation) {
        const std::string n = std::to_string(*a.lock_generation);
        reasons.push_back(a.lock_name() + " is generation " + n + "'s lock");
        plan.what = ": " + reasons.front() + "; generation " + cur +
                    " is current (`envbox rollback " + env + " --to " + n + "` would switch to it)";
    } else {
        reasons.push_back(file + " changed since generation " + cur);
        plan.what = " changed since generation " + cur + " (" + reasons.front() + ")";
    }
    return plan;
}

}  // namespace envbox::ops
