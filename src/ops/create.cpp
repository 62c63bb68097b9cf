#include "envbox/ops/create.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "create_steps.hpp"
#include "cuda_guard.hpp"
#include "envbox/env/build.hpp"
#include "envbox/env/cuda.hpp"
#include "envbox/install/generation.hpp"
#include "envbox/install/transaction.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/stopwatch.hpp"
#include "link.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace create_steps {

namespace {

// manifests/ENV.toml of the project, parsed; nullopt without a project or without the file.
std::optional<lock::Manifest> read_manifest_if_any(const fs::path& manifest_path) {
    std::error_code ec;
    if (manifest_path.empty() || !fs::exists(manifest_path, ec)) return std::nullopt;
    return read_manifest(manifest_path);
}

// Writes the project's lock again when `freshness` says it must be; --locked refuses instead.
// Returns the lock as freshness read it when it is used as it is, none when it was written again.
std::optional<lock::LockFile> relock_if_stale(const Context& ctx, const CreateOptions& opt,
                                              const Inputs& in, bool& relocked) {
    Freshness f = opt.freshness ? *opt.freshness : freshness(in.manifest_path, in.lock_path);
    if (!f.needs_lock()) return std::move(f.lock);
    if (opt.locked) throw locked_refusal(opt.env, f.reasons);
    if (!f.reasons.empty())  // one line: the first reason, and how many more
        ctx.progress->note(f.reasons.front() +
                           (f.reasons.size() > 1
                                ? " (and " + std::to_string(f.reasons.size() - 1) + " more)"
                                : "") +
                           "; locking first");
    LockOptions lo;
    lo.env = opt.env;
    lo.offline = opt.offline;
    lock(ctx, lo);
    relocked = true;
    return std::nullopt;
}

}  // namespace

Inputs read_inputs(const Context& ctx, const CreateOptions& opt, const std::string* lock_text) {
    // The manifest gives the target; the lock says what to install.
    Inputs in;
    if (!ctx.project_root.empty()) in.manifest_path = ctx.project().manifest(opt.env);
    in.manifest = read_manifest_if_any(in.manifest_path);
    in.lock_path = opt.lock ? fs::absolute(*opt.lock) : ctx.project().lock(opt.env);
    if (!opt.lock) ctx.project().required("; use --project DIR or --lock FILE");
    // With a manifest and its own lock: lock first when the lock is missing or stale. The lock
    // freshness read is the one used, unless it was written again.
    std::optional<lock::LockFile> read;
    if (lock_text) {
        auto parsed = lock::parse_lock_file(in.lock_path, *lock_text);
        if (!parsed) throw parsed.error();
        read = std::move(*parsed);
    } else if (in.manifest && !opt.lock && !opt.frozen) {
        read = relock_if_stale(ctx, opt, in, in.relocked);
    }
    if (!read) {
        std::error_code ec;
        if (!fs::exists(in.lock_path, ec))
            throw Error(
                ErrorCode::invalid_input,
                "no lock file " + in.lock_path.string() +
                    (in.manifest ? " (run `envbox lock " + opt.env + "` to write it)" : ""));
        auto parsed = lock::read_lock_file(in.lock_path);
        if (!parsed) throw parsed.error();
        read = std::move(*parsed);
    }
    in.lock = std::move(*read);
    if (in.manifest) {  // [install].prefer names packages of this lock
        std::vector<std::string> names;
        for (const auto& p : in.lock.pylock.packages)
            names.push_back(p.name);
        if (auto e = in.manifest->check_prefer(names, in.manifest_path.string())) throw *e;
    }
    return in;
}

void check_cuda_coherence(const std::vector<install::Item>& items, const lock::Manifest* manifest,
                          const Inputs& in) {
    std::vector<env::CudaPackage> cuda;
    for (const auto& item : items)
        if (item.package->version)
            if (auto l = env::cuda_line_of(item.package->name, *item.package->version))
                cuda.push_back({item.package->name, item.package->version->str(), *l});
    auto why = env::cuda_incoherence(cuda, manifest ? manifest->cuda : std::nullopt);
    if (!why) return;
    if (in.lock.tool && in.lock.tool->allow_mixed_cuda) return;
    throw Error(ErrorCode::invalid_input,
                *why + "\nrefusing to create an environment from " + in.lock_path.string() +
                    " (lock it again with `envbox lock`, or with --allow-mixed-cuda if this is "
                    "really meant, which the lock records)");
}

namespace {}  // namespace

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

std::string generation_digest(const std::string& lock_text, const install::Target& target,
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

std::optional<std::string> link_project_dir(const fs::path& project_root, const std::string& env,
                                            const fs::path& edir) {
    const fs::path link_dir = project_root / ".envbox";
    // `.envbox` may come with the repository: a committed link there is refused, and every
    // name below is made relative to the folder's own descriptor (the link rule).
    UniqueFd dir;
    try {
        dir = make_own_dir(project_root, ".envbox");
    } catch (const Error& e) {
        return "cannot create " + link_dir.string() + ": " + e.what();
    }
    struct stat st {};
    if (::fstatat(dir.get(), ".gitignore", &st, AT_SYMLINK_NOFOLLOW) != 0) {
        const std::string tmp = ".gitignore.tmp." + std::to_string(::getpid());
        UniqueFd f(::openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
        const bool ok = f && write_all_fd(f.get(), "*\n", 2) &&
                        ::renameat(dir.get(), tmp.c_str(), dir.get(), ".gitignore") == 0;
        if (!ok) {
            std::string why =
                "cannot write " + (link_dir / ".gitignore").string() + ": " + std::strerror(errno);
            ::unlinkat(dir.get(), tmp.c_str(), 0);
            return why;
        }
    }
    const std::string tmp = "." + env + ".tmp";
    ::unlinkat(dir.get(), tmp.c_str(), 0);
    if (::symlinkat((edir / "current").c_str(), dir.get(), tmp.c_str()) != 0 ||
        ::renameat(dir.get(), tmp.c_str(), dir.get(), env.c_str()) != 0) {
        std::string why = "cannot link " + (link_dir / env).string() + ": " + std::strerror(errno);
        ::unlinkat(dir.get(), tmp.c_str(), 0);
        return why;
    }
    return std::nullopt;
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

namespace {

// Whether create links the environment on paper: always, unless ENVBOX_BENCH_NO_LINK_CHECK is
// set, which bench/device_link_check.sh sets to measure what the check costs a cold create.
bool link_checked() {
    static const bool checked = std::getenv("ENVBOX_BENCH_NO_LINK_CHECK") == nullptr;
    return checked;
}

// The transaction's source and work: the lock's files with the manifest's indexes (and git
// URLs, the only ones its credentials go to), or what pull or unpack received; the bytecode.
install::TransactionOptions transaction_options(const Context& ctx, const CreateOptions& opt,
                                                const create_steps::Inputs& in,
                                                const Received* received) {
    install::TransactionOptions o;
    o.site = {ctx.home, ctx.progress, ctx.jobs, git_settings(ctx), {}};
    o.http = http_options(ctx, opt.offline);
    if (in.manifest) o.indexes = index_configs(*in.manifest, in.manifest_path, ctx.settings);
    if (in.manifest)
        for (const auto& [name, source] : in.manifest->local_sources)
            if (!source.git.empty()) o.site.git_credential_urls[name] = source.git;
    o.offline = opt.offline;
    // A local tree's digest leaves out the project's manifests/ (its locks change with every
    // `lock`); without a project, the lock's folder's sibling of that name (as `push` finds it).
    o.manifests =
        ctx.project_root.empty() ? in.lock.path.parent_path() : ctx.project_root / "manifests";
    if (received) o.received = &received->artifact;
    o.verify_by_content = opt.force;
    o.elf_facts = link_checked();  // for the link check, read beside the ingest and compiling
    return o;
}

// The link check of the selected wheels, now in the store: refuses before a generation is built
// (the current one stays), and shows what it does not refuse as notes, a bounded number.
LinkReport link_step(const Context& ctx, const store::Store& store,
                     const std::vector<install::Item>& items, const env::Interpreter& interpreter,
                     const create_steps::Inputs& in, const std::string& env) {
    std::vector<LinkPackage> packages;
    for (const auto& item : items)
        packages.push_back({item.package->name,
                            item.package->version ? item.package->version->str() : "",
                            item.wheel ? &*item.wheel : nullptr, item.elf ? &*item.elf : nullptr});
    LinkReport report =
        check_links(store, packages, interpreter,
                    {&in.lock.pylock, in.lock.tool ? in.lock.tool->cuda : ""}, ctx.jobs,
                    /*cached=*/true);
    const bool mixed = in.lock.tool && in.lock.tool->allow_mixed_cuda;
    const auto notes =
        refuse_unlinked(report, env, in.manifest ? &*in.manifest : nullptr, mixed, in.lock_path);
    constexpr std::size_t kShown = 8;
    for (std::size_t i = 0; i < notes.size() && i < kShown; ++i)
        ctx.progress->note("link check: " + notes[i].message);
    if (notes.size() > kShown)
        ctx.progress->note("link check: " + std::to_string(notes.size() - kShown) +
                           " more findings (`envbox verify " + env + "` lists them all)");
    return report;
}

}  // namespace

// The pipeline; each step's contract is in create_steps.hpp.
CreateResult create(const Context& ctx, const CreateOptions& opt, const Received* received) {
    using namespace create_steps;
    Stopwatch whole;
    check_env_name(opt.env);
    Progress& progress = *ctx.progress;
    const store::Home home(ctx.home);

    if (!ctx.project_root.empty())  // whose environments these are, said before they exist
        if (auto k = project_key_of(ctx.home, ctx.project_root); !k.note.empty())
            progress.note(k.note);
    const Inputs in = read_inputs(ctx, opt, received ? &received->lock_text : nullptr);
    const lock::Manifest* manifest = in.manifest ? &*in.manifest : nullptr;
    const install::Target target = install::create_target(
        manifest, home.interpreters(), opt.env, interpreter_search(ctx.settings), opt.target);
    const env::Interpreter& interpreter = *target.interpreter;
    install::TransactionOptions to = transaction_options(ctx, opt, in, received);
    to.bytecode = install::bytecode_keys(interpreter, manifest, opt.compile, progress);
    install::Transaction transaction(in.lock, target, std::move(to));
    const std::vector<install::Item>& items = transaction.items();

    CreateResult result;
    result.relocked = in.relocked;
    result.select_s = whole.total();
    result.python = interpreter.full_version + " (" + interpreter.executable.string() + ")";
    result.packages = items.size();

    check_cuda_coherence(items, manifest, in);
    if (auto note = check_driver(install::items_cuda_lines(items), ctx.settings))
        progress.note(*note);
    const fs::path edir = env_dir(ctx, opt.env);
    EnvLocks held = lock_environment(ctx, opt, edir);

    // A local tree's digest is part of it: an edited tree builds a new generation.
    const std::string digest = generation_digest(in.lock.text + transaction.local_inputs(), target,
                                                 manifest, transaction.bytecode());
    if (auto cur = env::current_generation(edir); cur && cur->lock_digest == digest && !opt.force) {
        result.generation = cur->number;
        result.path = cur->path;
        result.seconds = whole.total();
        return result;
    }
    std::vector<std::pair<std::string, std::string>> now;  // another CUDA line only on purpose
    for (const auto& item : items)
        if (item.package->version)
            now.emplace_back(item.package->name, item.package->version->str());
    if (auto moved = check_cuda_move(opt, ctx.home, edir, now, in.lock.text, in.lock_path))
        progress.note("! " + *moved + ": " + opt.env + " moves to it on purpose");
    if (opt.on_build) opt.on_build();
    if (!ctx.project_root.empty())
        write_file_atomic(edir.parent_path() / "project", ctx.project_root.string() + "\n", 0644,
                          Durability::none);

    store::Store store(ctx.home);
    result.fetch = transaction.fetch(store);
    if (link_checked()) result.link = link_step(ctx, store, items, interpreter, in, opt.env);

    env::Generation gen =
        install::next_generation(edir, opt.env, digest, in.lock_path, target, opt.link_mode);
    result.build = transaction.execute(store, gen, edir, manifest,
                                       {opt.env, in.lock.text, opt.link_mode, ctx.jobs});
    for (const auto& n : result.build.install.notes)  // a path two wheels ship, and the choice
        progress.note(n);

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
