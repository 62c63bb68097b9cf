#include "envbox/ops/create.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <set>

#include "envbox/env/cuda.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/env/interpreter.hpp"
#include "envbox/env/venv.hpp"
#include "envbox/index/fetch.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// What one selected package installs from.
struct Item {
    const lock::Package* package = nullptr;
    const lock::FileRef* file = nullptr;
    bool direct = false;  // installed from `archive` (PEP 610 direct URL)
    std::string sha256;
    std::string filename;
    std::optional<store::WheelFiles> wheel;
    store::IngestStats stats;
    bool fetched = false;
    bool repair = false;            // in the store, but an object of it was touched
    std::set<std::string> replace;  // repair: the objects to store again
};

// Loads each item's wheel from the store, and returns the items to fetch and ingest: those
// the store lacks, and those with an object that was touched since ingest (checked by stat, or
// with `hash` by content too), so nothing touched is ever linked into a new generation; their
// ingest replaces the damaged objects. Every object is checked, on `jobs` threads.
std::vector<std::size_t> stored_or_missing(const store::Store& store, std::vector<Item>& items,
                                           bool hash, unsigned jobs, Progress& progress) {
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (auto w = store.load_wheel(items[i].sha256))
            items[i].wheel = std::move(*w);
        else
            missing.push_back(i);
    }
    std::vector<std::optional<store::Store::Damage>> damage(items.size());
    parallel_for(items.size(), jobs, [&](std::size_t i) {
        if (items[i].wheel) damage[i] = store.damaged_objects(*items[i].wheel, hash);
    });
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (!damage[i]) continue;
        progress.note("store object " + damage[i]->first +
                      (damage[i]->digests.size() > 1
                           ? " (and " + std::to_string(damage[i]->digests.size() - 1) + " more)"
                           : "") +
                      "; storing " + items[i].filename + " again");
        items[i].wheel.reset();
        items[i].repair = true;
        items[i].replace = std::move(damage[i]->digests);
        missing.push_back(i);
    }
    return missing;
}

std::string direct_url_json(const Item& item) {
    const lock::FileRef& f = *item.file;
    // PEP 610: the recorded URL carries no credentials.
    std::string url =
        f.url ? index::strip_userinfo(*f.url) : "file://" + (f.path ? *f.path : item.filename);
    return "{\"archive_info\": {\"hash\": \"sha256=" + item.sha256 +
           "\", \"hashes\": {\"sha256\": \"" + item.sha256 + "\"}}, \"url\": " + json_quote(url) +
           "}";
}

std::vector<env::CudaLine> items_cuda_lines(const std::vector<Item>& items) {
    std::vector<env::CudaLine> lines;
    for (const auto& item : items)
        if (item.package->version)
            if (auto l = env::cuda_line_of(item.package->name, *item.package->version))
                lines.push_back(*l);
    return lines;
}

// Points PROJECT/.envbox/ENV at the environment's `current` (and makes .envbox/ ignore itself
// in git). Returns what went wrong, never throws.
std::optional<std::string> link_project_dir(const fs::path& project_root, const std::string& env,
                                            const fs::path& edir) {
    const fs::path link_dir = project_root / ".envbox";
    std::error_code ec;
    fs::create_directories(link_dir, ec);
    if (ec) return "cannot create " + link_dir.string() + ": " + ec.message();
    try {
        if (!fs::exists(link_dir / ".gitignore", ec))
            write_file_atomic(link_dir / ".gitignore", "*\n", 0644, Durability::none);
    } catch (const Error& e) {
        return std::string(e.what());
    }
    fs::path tmp = link_dir / ("." + env + ".tmp");
    fs::remove(tmp, ec);
    fs::create_symlink(edir / "current", tmp, ec);
    if (!ec) fs::rename(tmp, link_dir / env, ec);
    if (ec) {
        std::string why = "cannot link " + (link_dir / env).string() + ": " + ec.message();
        fs::remove(tmp, ec);
        return why;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> check_driver(const std::vector<env::CudaLine>& lines) {
    if (lines.empty()) return std::nullopt;
    env::CudaLine newest = lines.front();
    for (const auto& l : lines)
        if (l.major > newest.major) newest = l;
    auto driver = env::nvidia_driver_version();
    if (!driver)
        return "no NVIDIA driver found here: the CUDA " + newest.str() +
               " packages will not find a GPU";
    if (auto why = env::driver_refuses(*driver, newest)) throw Error(ErrorCode::cuda, *why);
    return std::nullopt;
}

CreateResult create(const Context& ctx, const CreateOptions& opt) {
    auto started = std::chrono::steady_clock::now();
    check_env_name(opt.env);
    Progress& progress = *ctx.progress;

    // The manifest gives the target; the lock says what to install.
    std::optional<lock::Manifest> manifest;
    fs::path manifest_path;
    if (!ctx.project_root.empty()) {
        manifest_path = ctx.project_root / "manifests" / (opt.env + ".toml");
        std::error_code ec;
        if (fs::exists(manifest_path, ec)) {
            auto m = lock::Manifest::parse(read_file(manifest_path), manifest_path.string());
            if (!m) throw m.error();
            manifest = std::move(*m);
        }
    }
    fs::path lock_path = opt.lock
                             ? fs::absolute(*opt.lock)
                             : ctx.project_root / "manifests" / ("pylock." + opt.env + ".toml");
    if (ctx.project_root.empty() && !opt.lock)
        throw Error(ErrorCode::invalid_input,
                    "no project here (no manifests/ directory in this directory or above); "
                    "use --project DIR or --lock FILE");
    std::error_code ec;
    bool relocked = false;
    // With a manifest and its own lock: lock first when the lock is missing or stale. A lock
    // envbox did not write (no [tool.envbox]) is used as it is.
    if (manifest && !opt.lock && !opt.frozen) {
        std::vector<std::string> reasons;
        if (!fs::exists(lock_path, ec)) {
            reasons.push_back("there is no lock file " + lock_path.string());
        } else {
            auto tool = lock::read_tool_table(read_file(lock_path), lock_path.string());
            if (tool && tool->values.count("manifest-digest"))
                reasons = lock_staleness(manifest_path, lock_path);
        }
        if (!reasons.empty()) {
            if (opt.locked) {
                std::string msg = "--locked: the lock of " + opt.env + " needs updating:";
                for (const auto& r : reasons)
                    msg += "\n  " + r;
                throw Error(ErrorCode::invalid_input, msg + "\nrun `envbox lock " + opt.env + "`");
            }
            for (const auto& r : reasons)
                progress.note(r + "; locking first");
            LockOptions lo;
            lo.env = opt.env;
            lo.offline = opt.offline;
            lock(ctx, lo);
            relocked = true;
        }
    }
    if (!fs::exists(lock_path, ec))
        throw Error(ErrorCode::invalid_input,
                    "no lock file " + lock_path.string() +
                        (manifest ? " (run `envbox lock " + opt.env + "` to write it)" : ""));
    const std::string lock_text = read_file(lock_path);
    auto parsed = lock::Pylock::parse(lock_text, lock_path.string());
    if (!parsed) throw parsed.error();
    const lock::Pylock& pylock = *parsed;
    if (manifest) {  // [install].prefer names packages of this lock
        std::vector<std::string> names;
        for (const auto& p : pylock.packages)
            names.push_back(p.name);
        if (auto e = manifest->check_prefer(names, manifest_path.string())) throw *e;
    }

    // The interpreter and the target it defines.
    const fs::path probe_cache = ctx.home / "cache" / "interpreters";
    env::Interpreter interpreter =
        manifest ? env::find_interpreter(manifest->python_major, manifest->python_minor, false,
                                         probe_cache)
                 : env::default_interpreter(probe_cache);
    std::string platform;
    if (manifest) {
        platform = manifest->platform;
    } else {
        if (interpreter.glibc.empty())
            throw Error(ErrorCode::invalid_input,
                        "cannot tell this machine's platform (no glibc); write manifests/" +
                            opt.env + ".toml with a platform");
        std::string machine = interpreter.markers.values.count("platform_machine")
                                  ? interpreter.markers.values.at("platform_machine")
                                  : "x86_64";
        std::string glibc = interpreter.glibc;
        for (auto& c : glibc)
            if (c == '.') c = '_';
        platform = "manylinux_" + glibc + "_" + machine;
    }
    auto tags = pep::TargetTags::cpython(interpreter.major, interpreter.minor, platform,
                                         interpreter.free_threaded());
    if (!tags) throw tags.error();

    lock::SelectTarget target;
    target.environment = interpreter.markers;
    target.tags = &*tags;
    auto selected = lock::select(pylock, target);
    if (!selected) {
        Error e = selected.error();
        e.add_context("selecting packages from " + lock_path.string() + " for CPython " +
                      interpreter.full_version + " on " + platform);
        throw e;
    }

    std::vector<Item> items;
    for (const auto& sel : *selected) {
        Item item;
        item.package = sel.package;
        const std::string label =
            sel.package->name + (sel.package->version ? " " + sel.package->version->str() : "");
        if (sel.kind == lock::Selection::Kind::wheel) {
            item.file = sel.file;
        } else if (sel.kind == lock::Selection::Kind::archive && sel.file &&
                   sel.file->filename().ends_with(".whl")) {
            item.file = sel.file;
            item.direct = true;
        } else {
            const char* what = sel.kind == lock::Selection::Kind::sdist       ? "only an sdist"
                               : sel.kind == lock::Selection::Kind::directory ? "a local directory"
                               : sel.kind == lock::Selection::Kind::vcs       ? "a VCS checkout"
                                                                        : "a non-wheel archive";
            throw Error(ErrorCode::invalid_input,
                        lock_path.string() + ":" + std::to_string(sel.package->line) + ": " +
                            label + " offers " + what + " for CPython " + interpreter.version_xy() +
                            " on " + platform + "; envbox installs wheels only");
        }
        auto sha = item.file->sha256();
        if (!sha)
            throw Error(ErrorCode::invalid_input, lock_path.string() + ":" +
                                                      std::to_string(item.file->line) + ": " +
                                                      label + " has no sha256 hash");
        item.sha256 = *sha;
        item.filename = item.file->filename();
        items.push_back(std::move(item));
    }

    auto lap = [last = std::chrono::steady_clock::now()]() mutable {
        auto now = std::chrono::steady_clock::now();
        double s = std::chrono::duration<double>(now - last).count();
        last = now;
        return s;
    };
    double select_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    // The driver must be able to run the environment's CUDA line.
    if (auto note = check_driver(items_cuda_lines(items))) progress.note(*note);

    // One create per environment at a time.
    const fs::path edir = env_dir(ctx, opt.env);
    fs::create_directories(edir, ec);
    if (ec) throw Error(ErrorCode::generic, "cannot create " + edir.string() + ": " + ec.message());
    fs::create_directories(ctx.home / "locks", ec);
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
    // Held shared until this create ends: gc's sweep (exclusive) never deletes what this create
    // has ingested but not yet linked.
    FileLock store_lock = FileLock::shared(store_lock_path(ctx), [&] {
        progress.note("waiting for a running `envbox gc` to finish its sweep…");
    });

    std::string prefer;  // [install].prefer decides which file overlapping wheels install
    if (manifest)
        for (const auto& p : manifest->install_prefer)
            prefer += "\n--prefer " + p.name;
    const std::string digest =
        to_hex(sha256(lock_text + "\n--target " + interpreter.executable.string() + " " +
                      interpreter.full_version + " " + platform + prefer));
    CreateResult result;
    result.relocked = relocked;
    result.select_s = select_s;
    result.python = interpreter.full_version + " (" + interpreter.executable.string() + ")";
    result.packages = items.size();
    if (auto cur = env::current_generation(edir); cur && cur->lock_digest == digest && !opt.force) {
        result.generation = cur->number;
        result.path = cur->path;
        result.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        return result;
    }

    if (!ctx.project_root.empty())
        write_file_atomic(edir.parent_path() / "project", ctx.project_root.string() + "\n", 0644,
                          Durability::none);

    // Fetch and ingest what the store lacks, in parallel across wheels.
    store::Store store(ctx.home);
    std::vector<std::size_t> missing =
        stored_or_missing(store, items, opt.force, ctx.jobs, progress);
    result.repaired =
        std::count_if(items.begin(), items.end(), [](const Item& i) { return i.repair; });
    // Downloads land in cache/downloads/<sha256>.whl (resumed there when interrupted) and go
    // once their wheel is in the store; the index's CA and credentials come from the manifest.
    const fs::path downloads_dir = ctx.home / "cache" / "downloads";
    const std::vector<resolve::IndexConfig> index_config =
        manifest ? index_configs(*manifest, manifest_path) : std::vector<resolve::IndexConfig>{};
    auto request_for = [&](const Item& item) {
        index::ArtifactRequest req;
        req.display = item.filename;
        req.location = item.file->path ? *item.file->path : item.file->url.value_or("");
        req.sha256 = item.sha256;
        req.size = item.file->size;
        if (item.package->index) {
            std::string url = *item.package->index;
            while (!url.empty() && url.back() == '/')
                url.pop_back();
            for (const auto& c : index_config)
                if (c.url == url) {
                    req.ca = c.ca;
                    req.username = c.username;
                    req.password = c.password;
                    req.index_url = c.url;
                }
        }
        return req;
    };
    if (!missing.empty() && opt.offline) {
        for (std::size_t i : missing) {
            auto req = request_for(items[i]);
            std::error_code exists_ec;
            if (!index::local_artifact_path(req, lock_path.parent_path()) &&
                !fs::exists(index::download_path(downloads_dir, req.sha256), exists_ec))
                throw Error(ErrorCode::network,
                            "--offline: " + items[i].filename +
                                " is not in the store and would be downloaded from " +
                                index::redact_url(req.location));
        }
    }
    index::HttpClient http(ctx.home / "cache" / "http", opt.offline);
    // Largest first, so the torch-sized wheel starts at once instead of being the last thing
    // running while every other worker idles.
    std::stable_sort(missing.begin(), missing.end(), [&](std::size_t x, std::size_t y) {
        return items[x].file->size.value_or(0) > items[y].file->size.value_or(0);
    });
    progress.phase("Fetching", missing.size());
    {
        std::uint64_t to_download = 0;
        for (std::size_t i : missing)
            if (!index::local_artifact_path(request_for(items[i]), lock_path.parent_path()))
                to_download += items[i].file->size.value_or(0);
        progress.download_total(to_download);
    }
    // One pool for the whole fetch-and-ingest: each wheel's fetch task (downloads first,
    // largest wheels first) adds that wheel's ingest tasks, and the biggest pieces of work of
    // all wheels run first, so torch's gigabyte library starts at once and its thousands of
    // small files spread over every core.
    struct Pending {
        std::unique_ptr<store::Ingest> ingest;
        std::atomic<std::size_t> remaining{0};
        fs::path downloaded;  // removed once its wheel is stored, or when it proves bad
        std::atomic<bool> failed{false};
    };
    std::vector<Pending> pending(items.size());
    struct RemoveBadDownloads {  // a download that was never ingested stays for the next run
        std::vector<Pending>& pending;
        ~RemoveBadDownloads() {
            for (auto& p : pending) {
                p.ingest.reset();
                std::error_code ec;
                if (p.failed && !p.downloaded.empty()) fs::remove(p.downloaded, ec);
            }
        }
    } remove_bad_downloads{pending};
    auto with_context = [&](Item& item, const std::string& location, auto&& fn) {
        try {
            fn();
        } catch (Error& e) {
            if (e.code() == ErrorCode::integrity)
                pending[static_cast<std::size_t>(&item - items.data())].failed = true;
            e.add_context("fetching " + item.package->name + " from " +
                          index::redact_url(location));
            throw;
        }
    };
    auto finish = [&](std::size_t i, const std::string& location) {
        Item& item = items[i];
        with_context(item, location, [&] { item.wheel = pending[i].ingest->finish(&item.stats); });
        item.fetched = true;
        pending[i].ingest.reset();
        if (!pending[i].downloaded.empty()) {
            std::error_code ignored;
            fs::remove(pending[i].downloaded, ignored);
            pending[i].downloaded.clear();
        }
        progress.advance(1);
    };
    TaskPool pool(ctx.jobs);
    result.jobs = ctx.jobs;
    for (std::size_t k = 0; k < missing.size(); ++k) {
        const std::size_t i = missing[k];
        pool.add(UINT64_MAX - k, [&, i](TaskPool& tasks) {
            Item& item = items[i];
            const index::ArtifactRequest req = request_for(item);
            Pending& p = pending[i];
            with_context(item, req.location, [&] {
                // Local or downloaded, the archive is hashed by one of the ingest's own tasks,
                // beside the others, and nothing is stored unless it matches the lock.
                fs::path archive;
                if (auto local = index::local_artifact_path(req, lock_path.parent_path())) {
                    archive = *local;
                } else {
                    p.downloaded = index::download_path(downloads_dir, req.sha256);
                    archive = index::download_artifact(
                        http, req, downloads_dir, [&](std::uint64_t n) { progress.downloaded(n); });
                }
                p.ingest = std::make_unique<store::Ingest>(store, archive, item.sha256,
                                                           item.filename, true, item.file->size);
                if (item.repair) p.ingest->replace_objects(item.replace);
            });
            const std::size_t n = p.ingest->task_count();
            p.remaining = n;
            if (n == 0) return finish(i, req.location);
            for (std::size_t t = 0; t < n; ++t)
                tasks.add(p.ingest->task_cost(t), [&, i, t, location = req.location](TaskPool&) {
                    with_context(items[i], location, [&] { pending[i].ingest->run_task(t); });
                    if (--pending[i].remaining == 0) finish(i, location);
                });
        });
    }
    pool.run();
    result.ingest_s = lap();
    std::vector<const store::WheelFiles*> to_publish;
    for (std::size_t i : missing) {
        to_publish.push_back(&*items[i].wheel);
        result.fetched++;
        result.ingest += items[i].stats;
    }
    store.publish(to_publish);
    result.publish_s = lap();

    // Build the next generation beside the others; unstamped leftovers of a crash go first.
    int number = 1;
    for (const auto& g : env::list_generations(edir)) {
        number = std::max(number, g.number + 1);
        if (!g.complete) fs::remove_all(g.path, ec);
    }
    env::Generation gen;
    gen.number = number;
    gen.path = edir / env::generation_dir_name(number);
    gen.created = utc_now();
    gen.lock_digest = digest;
    gen.lock_source = lock_path.string();
    gen.python = interpreter.executable.string();
    gen.python_version = interpreter.full_version;
    gen.platform = platform;
    gen.environment = opt.env;
    gen.link_mode = link_mode_name(opt.link_mode);

    std::set<std::string> roots;
    if (manifest)
        for (const auto& r : manifest->requirements)
            roots.insert(pep::canonicalize_name(r.name));
    std::vector<env::InstallRequest> requests;
    for (const auto& item : items) {
        env::InstallRequest r;
        r.wheel = &*item.wheel;
        r.requested = !manifest || roots.count(item.package->name) > 0;
        if (item.direct) r.direct_url = direct_url_json(item);
        r.preferred = manifest &&
                      std::any_of(manifest->install_prefer.begin(), manifest->install_prefer.end(),
                                  [&](const auto& p) { return p.name == item.package->name; });
        requests.push_back(r);
        gen.packages.push_back({item.package->name, item.wheel->version, item.sha256, item.filename,
                                r.requested, r.direct_url.value_or("")});
        gen.packages.back().preferred = r.preferred;
    }
    try {
        progress.phase("Installing", items.size());
        env::VenvLayout layout = env::create_venv(interpreter, gen.path, opt.env);
        result.install =
            env::install_wheels(store, interpreter, layout, requests, opt.link_mode, ctx.jobs);
        for (const auto& n : result.install.notes)
            progress.note(n);
        env::write_generation_record(gen, lock_text);
        result.install_s = lap();
        env::stamp_complete(gen.path);
        env::switch_current(edir, number);
        result.commit_s = lap();
    } catch (Error& e) {
        fs::remove_all(gen.path, ec);
        e.add_context("building " + opt.env + " generation " + std::to_string(number));
        throw;
    }

    // The project's .envbox/ENV link follows `current`, for IDEs. A convenience: the new
    // generation is current already, so a project that cannot be written (a read-only checkout)
    // gets a note, not a failure.
    if (!ctx.project_root.empty()) {
        if (auto why = link_project_dir(ctx.project_root, opt.env, edir))
            progress.note("generation " + std::to_string(number) + " is current, but " + *why);
    }
    result.changed = true;
    result.generation = number;
    result.path = gen.path;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

}  // namespace envbox::ops
