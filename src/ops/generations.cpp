#include "envbox/ops/generations.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <set>

#include "envbox/env/installer.hpp"
#include "envbox/env/interpreter.hpp"
#include "envbox/env/venv.hpp"
#include "envbox/install/built.hpp"
#include "envbox/ops/check.hpp"
#include "envbox/ops/inspect.hpp"
#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/stopwatch.hpp"
#include "link.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

env::Generation require_current(const Context& ctx, const std::string& env) {
    require_known_environment(ctx, env);
    auto gen = env::current_generation(env_dir(ctx, env));
    if (!gen)
        throw Error(ErrorCode::generic, "environment '" + env +
                                            "' has no current generation; run `envbox create " +
                                            env + "` first");
    return *gen;
}

}  // namespace

fs::path store_lock_path(const Context& ctx) {
    return store::Home(ctx.home).store_lock();
}

fs::path env_lock_path(const Context& ctx, const std::string& env) {
    return store::Home(ctx.home).env_lock(project_key(ctx), env);
}

store::CheckResult verify_store(const Context& ctx, bool deep) {
    std::error_code ec;
    fs::create_directories(store::Home(ctx.home).locks(), ec);
    FileLock store_lock = FileLock::shared(store_lock_path(ctx), [&] {
        ctx.progress->note("waiting for a gc of the store to finish");
    });
    store::Store store(ctx.home);
    return store.check(deep, ctx.jobs);
}

namespace {

// What a generation was built from, as the store holds it: each package's wheel and the
// bytecode of every key it was compiled for. Something missing is an integrity error naming
// the command that rebuilds it.
struct StoredInputs {
    std::vector<store::WheelFiles> wheels;
    std::vector<std::vector<store::WheelBytecode>> bytecode;  // per wheel
};

StoredInputs stored_inputs(store::Store& store, const env::Generation& g, const std::string& env) {
    StoredInputs out;
    auto& wheels = out.wheels;
    wheels.reserve(g.packages.size());
    for (const auto& p : g.packages) {
        auto w = store.load_wheel(p.wheel_sha256);
        if (!w)
            throw Error(ErrorCode::integrity,
                        "the store no longer holds " + p.filename + " (" + p.name + " " +
                            p.version + "), which generation " + std::to_string(g.number) +
                            " was built from; run `envbox create " + env + "`");
        wheels.push_back(std::move(*w));
    }
    // The .pyc files it links, by the keys it was compiled for.
    std::vector<store::BytecodeKey> keys;
    for (const auto& name : g.bytecode) {
        auto k = store::BytecodeKey::parse(name);
        if (!k)
            throw Error(ErrorCode::integrity, "generation " + std::to_string(g.number) +
                                                  " records an unknown bytecode key '" + name +
                                                  "'");
        keys.push_back(*k);
    }
    auto& bytecode = out.bytecode;
    bytecode.resize(wheels.size());
    for (std::size_t i = 0; i < wheels.size(); ++i)
        for (const auto& k : keys) {
            auto b = store.load_bytecode(wheels[i].wheel_sha256, k);
            if (!b)
                throw Error(ErrorCode::integrity,
                            "the store no longer holds the bytecode (" + k.name() + ") of " +
                                wheels[i].filename + ", which generation " +
                                std::to_string(g.number) + " links; run `envbox create " + env +
                                " --force`");
            bytecode[i].push_back(std::move(*b));
        }
    return out;
}

// A touched store object changed every environment that links it: each drift names them.
void name_shared_objects(const Context& ctx, env::VerifyReport& report) {
    std::set<std::string> touched;
    for (const auto& d : report.drift)
        if (!d.object_digest.empty()) touched.insert(d.object_digest);
    auto linking = generations_linking(ctx, touched);
    for (auto& d : report.drift)
        if (auto it = linking.find(d.object_digest);
            !d.object_digest.empty() && it != linking.end()) {
            d.detail += "; shared by";
            for (std::size_t i = 0; i < it->second.size(); ++i)
                d.detail += (i ? ", " : " ") + it->second[i];
        }
}

// The findings the manifest's `[install].allow-unlinked` lets through, marked so.
void mark_manifest_allowed(const Context& ctx, const std::string& env, env::LinkReport& report) {
    if (ctx.project_root.empty()) return;
    const fs::path manifest = ctx.project().manifest(env);
    std::error_code ec;
    if (!fs::exists(manifest, ec)) return;
    try {
        const lock::Manifest m = read_manifest(manifest);
        mark_allowed(report, &m, false);
    } catch (const Error&) {
        // a manifest that does not read allows nothing; the commands that read it say why
    }
}

}  // namespace

VerifyResult verify(const Context& ctx, const std::string& env, bool deep) {
    const Stopwatch started;
    VerifyResult result;
    result.generation = require_current(ctx, env);
    const env::Generation& g = result.generation;
    // The walk of the tree needs nothing but its path: it runs while the plan is made.
    auto on_disk =
        std::async(std::launch::async, [path = g.path] { return env::walk_generation(path); });
    env::Interpreter in = env::probe_interpreter(g.python, store::Home(ctx.home).interpreters());
    store::Store store(ctx.home);
    const StoredInputs stored = stored_inputs(store, g, env);
    const auto& wheels = stored.wheels;
    const auto& bytecode = stored.bytecode;
    result.load_s = started.total();
    std::vector<env::InstallRequest> requests;
    for (std::size_t i = 0; i < wheels.size(); ++i) {
        env::InstallRequest r;
        r.wheel = &wheels[i];
        for (const auto& b : bytecode[i])
            r.bytecode.push_back(&b);
        r.requested = g.packages[i].requested;
        if (!g.packages[i].direct_url.empty()) r.direct_url = g.packages[i].direct_url;
        r.preferred = g.packages[i].preferred;
        requests.push_back(r);
    }
    env::VenvLayout layout = env::VenvLayout::of(in, g.path);
    env::InstallPlan plan = env::plan_install(store, in, layout, requests);
    auto skeleton =
        env::venv_skeleton(in, g.path, g.environment.empty() ? env : g.environment, g.packages);
    // A generation built before envbox wrote its pip has none to check.
    if (!g.pip_shim && env::wants_pip_shim(g.packages)) {
        const std::string pkg = (layout.purelib / "pip").lexically_relative(layout.root).string();
        std::erase_if(skeleton, [&pkg](const env::VenvEntry& e) {
            return e.rel == pkg || e.rel.starts_with(pkg + "/") || e.rel.starts_with("bin/pip");
        });
    }
    result.plan_s = started.total() - result.load_s;
    result.report = env::verify_tree(store, layout, plan, skeleton, on_disk.get(), deep, ctx.jobs);
    name_shared_objects(ctx, result.report);
    const auto records = install::built_records(store);
    for (const auto& p : g.packages)
        if (auto it = records.find(p.wheel_sha256); it != records.end())
            result.built[p.name] = to_hex(sha256(it->second.key_text));
    result.check_s = started.total() - result.load_s - result.plan_s;
    result.link = check_generation_links(store, g, wheels, in, ctx.jobs);
    mark_manifest_allowed(ctx, env, result.link);
    result.lock = lock_agreement(ctx, env);
    result.seconds = started.total();
    return result;
}

env::LinkReport check_current_links(const Context& ctx, const std::string& env) {
    const env::Generation g = require_current(ctx, env);
    const env::Interpreter in =
        env::probe_interpreter(g.python, store::Home(ctx.home).interpreters());
    store::Store store(ctx.home);
    env::LinkReport report =
        check_generation_links(store, g, stored_inputs(store, g, env).wheels, in, ctx.jobs);
    mark_manifest_allowed(ctx, env, report);
    return report;
}

namespace {

// ENV's folder under envs/, which must exist (`history`, `pin`, `unpin`).
fs::path existing_env_dir(const Context& ctx, const std::string& env) {
    require_known_environment(ctx, env);
    fs::path edir = env_dir(ctx, env);
    std::error_code ec;
    if (!fs::is_directory(edir, ec))
        throw Error(ErrorCode::generic,
                    "environment '" + env + "' does not exist; run `envbox create " + env + "`");
    return edir;
}

}  // namespace

History history(const Context& ctx, const std::string& env) {
    const fs::path edir = existing_env_dir(ctx, env);
    History out;
    out.pins = env::read_pins(edir);
    out.events = env::read_events(edir);
    auto current = env::current_generation(edir);
    const env::Generation* previous = nullptr;
    std::map<std::string, int> first_of_lock;  // lock digest -> the oldest generation built from it
    std::map<int, env::CheckRecord> checks;
    for (auto& c : env::read_check_records(edir, &out.damaged_checks))
        checks.emplace(c.generation, std::move(c));
    const env::CheckRecord* checked = nullptr;  // the previous checked generation's record
    auto gens = env::list_generations(edir);
    for (const auto& g : gens) {
        HistoryEntry h;
        h.generation = g;
        h.current = current && current->number == g.number;
        h.pinned = std::any_of(out.pins.begin(), out.pins.end(),
                               [&](const env::Pin& p) { return p.number == g.number; });
        if (g.complete && !g.lock_digest.empty()) {
            auto [it, fresh] = first_of_lock.try_emplace(g.lock_digest, g.number);
            if (!fresh) h.same_lock_as = it->second;
        }
        if (g.complete && previous) {
            std::map<std::string, std::string> before, after;
            for (const auto& p : previous->packages)
                before[p.name] = p.version;
            for (const auto& p : g.packages)
                after[p.name] = p.version;
            for (const auto& [n, v] : after) {
                auto it = before.find(n);
                if (it == before.end())
                    h.added.push_back(n + " " + v);
                else if (it->second != v)
                    h.changed.push_back(n + " " + it->second + " → " + v);
            }
            for (const auto& [n, v] : before)
                if (!after.count(n)) h.removed.push_back(n + " " + v);
        }
        if (g.complete) previous = &g;
        if (auto it = checks.find(g.number); it != checks.end()) {
            if (checked) h.check_changes = compare_checks(*checked, it->second);
            h.check = it->second;
            checked = &it->second;
        }
        out.generations.push_back(std::move(h));
    }
    return out;
}

RollbackResult rollback(const Context& ctx, const std::string& env, std::optional<int> to) {
    const Stopwatch started;
    require_known_environment(ctx, env);
    fs::path edir = env_dir(ctx, env);
    fs::create_directories(store::Home(ctx.home).locks());
    FileLock lock(env_lock_path(ctx, env));
    auto current = env::current_generation(edir);
    if (!current)
        throw Error(ErrorCode::generic,
                    "environment '" + env + "' has no current generation to roll back from");
    auto gens = env::list_generations(edir);
    const env::Generation* target = nullptr;
    if (to) {
        for (const auto& g : gens)
            if (g.number == *to) target = &g;
        if (!target)
            throw Error(ErrorCode::usage, "generation " + std::to_string(*to) + " of " + env +
                                              " does not exist (see `envbox history " + env + "`)");
        if (!target->complete)
            throw Error(ErrorCode::generic,
                        "generation " + std::to_string(*to) + " of " + env +
                            " is incomplete (its build never finished); refusing to switch to it");
    } else {
        for (const auto& g : gens)
            if (g.complete && g.number < current->number) target = &g;
        if (!target)
            throw Error(ErrorCode::generic, "generation " + std::to_string(current->number) +
                                                " is the oldest complete generation of " + env +
                                                "; there is nothing to roll back to");
    }
    RollbackResult r;
    r.from = current->number;
    r.to = target->number;
    // Opened first: a link planted where the log goes is refused before anything switches.
    env::EventLog log(edir);
    if (r.from != r.to) {
        env::switch_current(edir, r.to);
        try {
            log.append({env::utc_timestamp(), "rollback", r.from, r.to});
        } catch (const Error& e) {  // switched all the same: say what history will lack
            ctx.progress->note("the rollback is not in " + env + "'s history: " + e.message());
        }
    }
    r.seconds = started.total();
    try {
        r.last_clean_check = last_clean_check(ctx, env);
    } catch (const Error& e) {  // switched all the same
        ctx.progress->note("the kept checks of " + env + " did not read: " + e.message());
    }
    return r;
}

namespace {

std::vector<int> numbers_of(const std::vector<env::Pin>& pins) {
    std::vector<int> out;
    for (const auto& p : pins)
        out.push_back(p.number);
    return out;
}

}  // namespace

PinResult pin(const Context& ctx, const std::string& env, std::optional<int> number) {
    const fs::path edir = existing_env_dir(ctx, env);
    fs::create_directories(store::Home(ctx.home).locks());
    FileLock lock(env_lock_path(ctx, env));
    auto pins = env::read_pins(edir);
    PinResult r;
    if (number) {
        r.number = *number;
        auto gen = env::read_generation(edir / env::generation_dir_name(*number));
        std::error_code ec;
        if (!gen || !fs::is_directory(gen->path, ec))
            throw Error(ErrorCode::usage, "generation " + std::to_string(*number) + " of " + env +
                                              " does not exist (see `envbox history " + env +
                                              "`); nothing was pinned");
        if (!gen->complete)
            throw Error(ErrorCode::generic,
                        "generation " + std::to_string(*number) + " of " + env +
                            " is incomplete (its build never finished); refusing to pin it");
    } else {
        auto current = env::current_generation(edir);
        if (!current)
            throw Error(ErrorCode::generic, "environment '" + env +
                                                "' has no current generation to pin; give N "
                                                "(see `envbox history " +
                                                env + "`)");
        r.number = current->number;
    }
    env::EventLog log(edir);  // a link planted there is refused before the pin is written
    if (std::none_of(pins.begin(), pins.end(),
                     [&](const env::Pin& p) { return p.number == r.number; })) {
        const std::string when = env::utc_timestamp();
        pins.push_back({r.number, when});
        std::sort(pins.begin(), pins.end(),
                  [](const env::Pin& a, const env::Pin& b) { return a.number < b.number; });
        env::write_pins(edir, pins);
        log.append({when, "pin", 0, r.number});
        r.changed = true;
    }
    r.pinned = numbers_of(pins);
    return r;
}

PinResult unpin(const Context& ctx, const std::string& env, int number) {
    const fs::path edir = existing_env_dir(ctx, env);
    fs::create_directories(store::Home(ctx.home).locks());
    FileLock lock(env_lock_path(ctx, env));
    auto pins = env::read_pins(edir);
    PinResult r;
    r.number = number;
    env::EventLog log(edir);
    if (std::erase_if(pins, [&](const env::Pin& p) { return p.number == number; }) > 0) {
        env::write_pins(edir, pins);
        log.append({env::utc_timestamp(), "unpin", 0, number});
        r.changed = true;
    }
    r.pinned = numbers_of(pins);
    return r;
}

}  // namespace envbox::ops
