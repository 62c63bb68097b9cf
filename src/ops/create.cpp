#include "envbox/ops/create.hpp"

#include "create_steps.hpp"
#include "cuda_guard.hpp"
#include "envbox/env/build.hpp"
#include "envbox/env/cuda.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace create_steps {

double Stopwatch::lap() {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
}

double Stopwatch::total() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::vector<std::string> relock_reasons(const fs::path& manifest_path, const fs::path& lock_path) {
    Freshness f = freshness(manifest_path, lock_path);
    return f.needs_lock() ? std::move(f.reasons) : std::vector<std::string>{};
}

namespace {

// manifests/ENV.toml of the project, parsed; nullopt without a project or without the file.
std::optional<lock::Manifest> read_manifest_if_any(const fs::path& manifest_path) {
    std::error_code ec;
    if (manifest_path.empty() || !fs::exists(manifest_path, ec)) return std::nullopt;
    return read_manifest(manifest_path);
}

// Writes the project's lock again when `relock_reasons` says so; --locked refuses instead.
bool relock_if_stale(const Context& ctx, const CreateOptions& opt, const Inputs& in) {
    std::vector<std::string> reasons = relock_reasons(in.manifest_path, in.lock_path);
    if (reasons.empty()) return false;
    if (opt.locked) throw locked_refusal(opt.env, reasons);
    for (const auto& r : reasons)
        ctx.progress->note(r + "; locking first");
    LockOptions lo;
    lo.env = opt.env;
    lo.offline = opt.offline;
    lock(ctx, lo);
    return true;
}

}  // namespace

Inputs read_inputs(const Context& ctx, const CreateOptions& opt) {
    // The manifest gives the target; the lock says what to install.
    Inputs in;
    if (!ctx.project_root.empty()) in.manifest_path = ctx.project().manifest(opt.env);
    in.manifest = read_manifest_if_any(in.manifest_path);
    in.lock_path = opt.lock ? fs::absolute(*opt.lock) : ctx.project().lock(opt.env);
    if (!opt.lock) ctx.project().required("; use --project DIR or --lock FILE");
    // With a manifest and its own lock: lock first when the lock is missing or stale.
    if (in.manifest && !opt.lock && !opt.frozen) in.relocked = relock_if_stale(ctx, opt, in);
    std::error_code ec;
    if (!fs::exists(in.lock_path, ec))
        throw Error(ErrorCode::invalid_input,
                    "no lock file " + in.lock_path.string() +
                        (in.manifest ? " (run `envbox lock " + opt.env + "` to write it)" : ""));
    in.lock_text = read_file(in.lock_path);
    auto parsed = lock::Pylock::parse(in.lock_text, in.lock_path.string());
    if (!parsed) throw parsed.error();
    in.pylock = std::move(*parsed);
    if (in.manifest) {  // [install].prefer names packages of this lock
        std::vector<std::string> names;
        for (const auto& p : in.pylock.packages)
            names.push_back(p.name);
        if (auto e = in.manifest->check_prefer(names, in.manifest_path.string())) throw *e;
    }
    return in;
}

namespace {

const char* non_wheel_kind(lock::Selection::Kind kind) {
    using Kind = lock::Selection::Kind;
    return kind == Kind::sdist       ? "only an sdist"
           : kind == Kind::directory ? "a local directory"
           : kind == Kind::vcs       ? "a VCS checkout"
                                     : "a non-wheel archive";
}

}  // namespace

std::vector<Item> select_items(const lock::Pylock& pylock, const Target& target,
                               const fs::path& lock_path) {
    lock::SelectTarget select_target;
    select_target.environment = target.markers;
    select_target.tags = &target.tags;
    auto selected = lock::select(pylock, select_target);
    if (!selected) {
        Error e = selected.error();
        std::string covered;  // the targets the lock is for, when it names them
        if (pylock.environments)
            for (const auto& m : *pylock.environments)
                covered += (covered.empty() ? "; the lock is for " : ", ") + m.str();
        e.add_context("selecting packages from " + lock_path.string() + " for CPython " +
                      target.python_full_version + " on " + target.platform + covered);
        throw e;
    }
    const std::string python_xy =
        std::to_string(target.python_major) + "." + std::to_string(target.python_minor);
    std::vector<Item> items;
    for (const auto& sel : *selected) {
        Item item;
        item.package = sel.package;
        const std::string label =
            sel.package->name + (sel.package->version ? " " + sel.package->version->str() : "");
        const std::string where = lock_path.string() + ":";
        item.file = sel.file;
        item.direct = sel.kind == lock::Selection::Kind::archive;
        if (sel.kind != lock::Selection::Kind::wheel &&
            !(item.direct && sel.file && sel.file->filename().ends_with(".whl")))
            throw Error(ErrorCode::invalid_input,
                        where + std::to_string(sel.package->line) + ": " + label + " offers " +
                            non_wheel_kind(sel.kind) + " for CPython " + python_xy + " on " +
                            target.platform + "; envbox installs wheels only");
        auto sha = item.file->sha256();
        if (!sha)
            throw Error(ErrorCode::invalid_input, where + std::to_string(item.file->line) + ": " +
                                                      label + " has no sha256 hash");
        item.sha256 = *sha;
        item.filename = item.file->filename();
        items.push_back(std::move(item));
    }
    return items;
}

void check_cuda_coherence(const std::vector<Item>& items, const lock::Manifest* manifest,
                          const Inputs& in) {
    std::vector<env::CudaPackage> cuda;
    for (const auto& item : items)
        if (item.package->version)
            if (auto l = env::cuda_line_of(item.package->name, *item.package->version))
                cuda.push_back({item.package->name, item.package->version->str(), *l});
    auto why = env::cuda_incoherence(cuda, manifest ? manifest->cuda : std::nullopt);
    if (!why) return;
    auto tool = lock::read_tool_table(in.lock_text, in.lock_path.string());
    if (tool && tool->values["allow-mixed-cuda"] == "true") return;
    throw Error(ErrorCode::invalid_input,
                *why + "\nrefusing to create an environment from " + in.lock_path.string() +
                    " (lock it again with `envbox lock`, or with --allow-mixed-cuda if this is "
                    "really meant, which the lock records)");
}

std::vector<env::CudaLine> items_cuda_lines(const std::vector<Item>& items) {
    std::vector<env::CudaLine> lines;
    for (const auto& item : items)
        if (item.package->version)
            if (auto l = env::cuda_line_of(item.package->name, *item.package->version))
                lines.push_back(*l);
    return lines;
}

namespace {

// Run's sync never moves an environment to another CUDA line: only an explicit create does.
void refuse_cuda_change(const CreateOptions& opt, const fs::path& edir,
                        const std::vector<Item>& items, const fs::path& lock_path) {
    auto cur = env::current_generation(edir);
    const auto text = cur ? env::read_generation_lock(cur->path) : std::nullopt;
    const auto was =
        text ? lock_identity(*text, cur->path / ".envbox" / "pylock.toml") : std::nullopt;
    if (!was) return;
    std::vector<std::pair<std::string, std::string>> now;
    for (const auto& item : items)
        if (item.package->version)
            now.emplace_back(item.package->name, item.package->version->str());
    auto change = env::cuda_change(*was, env::cuda_identity(now));
    if (!change) return;
    throw Error(ErrorCode::invalid_input,
                opt.env + ": " + *change + " in " + lock_path.string() + "\nrun does not move " +
                    opt.env + " (generation " + std::to_string(cur->number) +
                    ") to another CUDA line: `envbox create " + opt.env +
                    "` does it on purpose; `envbox run --frozen " + opt.env +
                    " …` runs generation " + std::to_string(cur->number) + " as it is");
}

}  // namespace

EnvLocks lock_environment(const Context& ctx, const CreateOptions& opt, const fs::path& edir) {
    Progress& progress = *ctx.progress;
    // Never through a link planted in the home (the link rule, docs/SECURITY.md).
    (void)make_own_dir_at_path(ctx.home, edir);
    (void)make_own_dir_at_path(ctx.home, store::Home(ctx.home).locks());
    std::optional<FileLock> env_lock;
    if (opt.no_wait) {
        env_lock.emplace(FileLock::try_lock(env_lock_path(ctx, opt.env)));
        if (!env_lock->held())
            throw Error(ErrorCode::generic, "another envbox is building or switching " + opt.env +
                                                " (--no-wait given; run again without it to wait)");
    } else {
        env_lock.emplace(env_lock_path(ctx, opt.env), [&] {
            progress.note("waiting for another envbox working on " + opt.env + "…");
        });
    }
    FileLock store_lock = FileLock::shared(store_lock_path(ctx), [&] {
        progress.note("waiting for a running `envbox gc` to finish its sweep…");
    });
    return EnvLocks{std::move(env_lock), std::move(store_lock)};
}

std::string generation_digest(const std::string& lock_text, const Target& target,
                              const lock::Manifest* manifest,
                              const std::vector<store::BytecodeKey>& bytecode) {
    std::string prefer;  // [install].prefer decides which file overlapping wheels install
    if (manifest)
        for (const auto& p : manifest->install_prefer)
            prefer += "\n--prefer " + p.name;
    std::string compiled;  // the .pyc files it links
    for (const auto& k : bytecode)
        compiled += "\n--bytecode " + k.name();
    return to_hex(sha256(lock_text + "\n--target " + target.interpreter->executable.string() + " " +
                         target.python_full_version + " " + target.platform + prefer + compiled));
}

// The generation transaction's report, in create's; its notes (a path two wheels ship, chosen
// by [install].prefer) said.
void take_build_report(CreateResult& result, env::BuildReport built, Progress& progress) {
    for (const auto& n : built.install.notes)
        progress.note(n);
    result.install = std::move(built.install);
    result.install_s = built.install_s;
    result.seal_s = built.seal_s;
    result.commit_s = built.commit_s;
}

}  // namespace create_steps

std::optional<std::string> check_driver(const std::vector<env::CudaLine>& lines,
                                        const Settings& settings) {
    if (lines.empty()) return std::nullopt;
    env::CudaLine newest = lines.front();
    for (const auto& l : lines)
        if (l.major > newest.major) newest = l;
    auto driver = env::nvidia_driver_version(settings.cuda_driver);
    if (!driver)
        return "no NVIDIA driver found here: the CUDA " + newest.str() +
               " packages will not find a GPU";
    if (auto why = env::driver_refuses(*driver, newest)) throw Error(ErrorCode::cuda, *why);
    return std::nullopt;
}

// The pipeline; each step's contract is in create_steps.hpp.
CreateResult create(const Context& ctx, const CreateOptions& opt) {
    using namespace create_steps;
    Stopwatch whole;
    check_env_name(opt.env);
    Progress& progress = *ctx.progress;
    const store::Home home(ctx.home);

    const Inputs in = read_inputs(ctx, opt);
    const lock::Manifest* manifest = in.manifest ? &*in.manifest : nullptr;
    const Target target = create_target(manifest, home.interpreters(), opt.env,
                                        interpreter_search(ctx.settings), opt.target);
    std::vector<Item> items = select_items(in.pylock, target, in.lock_path);
    const env::Interpreter& interpreter = *target.interpreter;

    CreateResult result;
    result.relocked = in.relocked;
    result.select_s = whole.total();
    Stopwatch phases;
    result.python = interpreter.full_version + " (" + interpreter.executable.string() + ")";
    result.packages = items.size();

    check_cuda_coherence(items, manifest, in);
    if (auto note = check_driver(items_cuda_lines(items), ctx.settings)) progress.note(*note);
    const fs::path edir = env_dir(ctx, opt.env);
    EnvLocks held = lock_environment(ctx, opt, edir);

    const std::vector<store::BytecodeKey> bytecode =
        bytecode_keys(interpreter, manifest, opt, progress);
    const std::string digest = generation_digest(in.lock_text, target, manifest, bytecode);
    if (auto cur = env::current_generation(edir); cur && cur->lock_digest == digest && !opt.force) {
        result.generation = cur->number;
        result.path = cur->path;
        result.seconds = whole.total();
        return result;
    }
    if (opt.keep_cuda_line) refuse_cuda_change(opt, edir, items, in.lock_path);
    if (opt.on_build) opt.on_build();
    if (!ctx.project_root.empty())
        write_file_atomic(edir.parent_path() / "project", ctx.project_root.string() + "\n", 0644,
                          Durability::none);

    store::Store store(ctx.home);
    FetchPlan plan;
    plan.lock_dir = in.lock_path.parent_path();
    plan.downloads = home.downloads();
    plan.http = http_options(ctx, opt.offline);
    if (manifest) plan.indexes = index_configs(*manifest, in.manifest_path, ctx.settings);
    plan.offline = opt.offline;
    if (opt.received) plan.received = &*opt.received;
    plan.verify_by_content = opt.force;
    plan.jobs = ctx.jobs;
    plan.interpreter = &interpreter;
    plan.bytecode = bytecode;
    fetch_into_store(store, items, plan, progress, phases, result);

    env::Generation gen = next_generation(edir, digest, in.lock_path, target, opt);
    for (const auto& k : bytecode)
        gen.bytecode.push_back(k.name());
    const std::vector<env::InstallRequest> requests = install_requests(items, manifest, gen);
    progress.phase("Installing", requests.size());
    env::BuildReport built =
        env::build_generation(store, *target.interpreter, gen, edir, requests,
                              {opt.env, in.lock_text, opt.link_mode, ctx.jobs});
    phases.lap();
    take_build_report(result, std::move(built), progress);

    // The project's .envbox/ENV link follows `current`, for IDEs. A convenience: the new
    // generation is current already, so a project that cannot be written (a read-only checkout)
    // gets a note, not a failure.
    if (!ctx.project_root.empty())
        if (auto why = link_project_dir(ctx.project_root, opt.env, edir))
            progress.note("generation " + std::to_string(gen.number) + " is current, but " + *why);
    result.changed = true;
    result.generation = gen.number;
    result.path = gen.path;
    result.seconds = whole.total();
    return result;
}

}  // namespace envbox::ops
