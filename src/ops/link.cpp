// The link check as commands run it (ops/link.hpp).
#include "link.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "envbox/env/cuda.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/stopwatch.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

// Each package's dependencies as positions in `packages`, from the lock's `dependencies`;
// nullopt for every package when the lock records none.
std::vector<std::optional<std::vector<std::size_t>>> link_dependencies(
    const std::vector<LinkPackage>& packages, const lock::Pylock* pylock) {
    std::vector<std::optional<std::vector<std::size_t>>> out(packages.size());
    if (!pylock || !pylock->has_dependency_graph()) return out;
    std::map<std::string, std::size_t> position;
    for (std::size_t i = 0; i < packages.size(); ++i)
        position[pep::canonicalize_name(packages[i].name)] = i;
    for (std::size_t i = 0; i < packages.size(); ++i) {
        const std::string name = pep::canonicalize_name(packages[i].name);
        const lock::Package* entry = nullptr;
        for (const auto& p : pylock->packages)
            if (p.name == name && (!p.version || p.version->str() == packages[i].version)) {
                entry = &p;
                break;
            }
        std::vector<std::size_t> deps;
        if (entry && entry->dependencies)
            for (const auto& d : *entry->dependencies)
                if (auto at = position.find(d.name); at != position.end())
                    deps.push_back(at->second);
        out[i] = std::move(deps);
    }
    return out;
}

std::string link_messages(const std::vector<env::LinkFinding>& findings) {
    std::string out;
    for (const auto& f : findings)
        out += "\n  " + f.message;
    return out;
}

// The check's input for `packages` (one wheel per package, in order; files set later).
env::LinkInput link_input(const std::vector<LinkPackage>& packages,
                          const env::Interpreter& interpreter, const LinkLock& lock) {
    env::LinkInput in;
    const auto deps = link_dependencies(packages, lock.pylock);
    std::vector<std::pair<std::string, std::string>> versions;
    for (std::size_t i = 0; i < packages.size(); ++i) {
        versions.emplace_back(packages[i].name, packages[i].version);
        const store::WheelFiles* w = packages[i].wheel;
        in.wheels.push_back({pep::canonicalize_name(packages[i].name), w ? w->filename : "",
                             w ? w->dist_info : "", !w || w->root_is_purelib, nullptr, deps[i]});
    }
    auto scheme = [&](const char* key) {
        auto it = interpreter.scheme.find(key);
        return it == interpreter.scheme.end() ? std::string() : it->second;
    };
    in.purelib = scheme("purelib");
    in.platlib = scheme("platlib");
    in.scripts = scheme("scripts");
    in.data = scheme("data");
    in.system_dirs = env::system_library_dirs();
    in.system_dirs.push_back(interpreter.executable.parent_path().parent_path() / "lib");
    in.interpreter = interpreter.executable;
    // The packages' line, else the manifest's: a CUDA 13 environment of no CUDA package still
    // refuses an extension that needs libcudart.so.12, found or not.
    if (auto line = env::cuda_identity(versions).line)
        in.cuda_major = line->major;
    else if (const auto dot = lock.cuda.find('.');
             !lock.cuda.empty() && dot != 0 && dot <= 3 &&
             lock.cuda.substr(0, dot).find_first_not_of("0123456789") == std::string::npos)
        in.cuda_major = std::stoi(lock.cuda.substr(0, dot));
    return in;
}

// The ELF facts of each package's wheel: those the fetch read, those the store keeps, and the
// members of the others read on every core, the biggest first (torch's libraries beside the
// small ones of other wheels), then kept. `owned` holds what was read here.
std::vector<const std::vector<store::ElfFile>*> wheel_facts(
    const store::Store& store, const std::vector<LinkPackage>& packages, unsigned jobs,
    std::vector<std::vector<store::ElfFile>>& owned) {
    const std::size_t n = packages.size();
    std::vector<std::optional<std::vector<store::ElfFile>>> kept(n);
    parallel_for(n, jobs, [&](std::size_t i) {
        if (packages[i].wheel && !packages[i].facts)
            kept[i] = store.kept_elf_facts(*packages[i].wheel);
    });
    std::vector<std::pair<std::size_t, const store::WheelFile*>> todo;  // wheel, member
    for (std::size_t i = 0; i < n; ++i)
        if (packages[i].wheel && !packages[i].facts && !kept[i])
            for (const store::WheelFile* f : store::Store::elf_candidates(*packages[i].wheel))
                todo.emplace_back(i, f);
    std::vector<std::size_t> order(todo.size());
    for (std::size_t k = 0; k < order.size(); ++k)
        order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return todo[a].second->size > todo[b].second->size;
    });
    std::vector<std::optional<store::ElfFile>> read(todo.size());
    parallel_for(order.size(), jobs, [&](std::size_t k) {
        read[order[k]] = store.read_elf_member(*todo[order[k]].second);
    });
    owned.assign(n, {});
    for (std::size_t k = 0; k < todo.size(); ++k)  // in each wheel's member order
        if (read[k]) owned[todo[k].first].push_back(std::move(*read[k]));
    std::vector<const std::vector<store::ElfFile>*> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (packages[i].facts) {
            out[i] = packages[i].facts;
            continue;
        }
        if (kept[i])
            owned[i] = std::move(*kept[i]);
        else if (packages[i].wheel)
            store.keep_elf_facts(*packages[i].wheel, owned[i]);
        out[i] = &owned[i];
    }
    return out;
}

}  // namespace

LinkReport check_links(const store::Store& store, const std::vector<LinkPackage>& packages,
                       const env::Interpreter& interpreter, const LinkLock& lock, unsigned jobs,
                       bool cached) {
    Stopwatch watch;
    env::LinkInput in = link_input(packages, interpreter, lock);
    std::string key = in.interpreter.string() + "\n" + in.purelib + " " + in.platlib + " " +
                      in.scripts + " " + in.data + "\ncuda " +
                      (in.cuda_major ? std::to_string(*in.cuda_major) : "-") + "\n";
    for (const auto& d : in.system_dirs)
        key += "dir " + d.string() + "\n";
    // The folders searched are stamped too: a library installed later (a driver's libcuda) or a
    // new copy in an earlier folder makes the result stale.
    std::vector<std::string> searched;
    for (const auto& d : in.system_dirs)
        if (std::error_code ec; fs::is_directory(d, ec)) searched.push_back(d.string());
    for (std::size_t i = 0; i < packages.size(); ++i) {
        if (!packages[i].wheel) continue;
        key += "wheel " + packages[i].wheel->wheel_sha256 + " " + in.wheels[i].name;
        if (!in.wheels[i].dependencies)
            key += " -";  // no graph: every wheel reaches every other
        else
            for (auto d : *in.wheels[i].dependencies)
                key += " " + in.wheels[d].name;
        key += "\n";
    }
    const fs::path file = link_cache_file(store.home(), key);
    if (cached)
        if (auto hit = read_link_cache(store.home(), file)) {
            hit->seconds = watch.total();
            return *hit;
        }
    Stopwatch facts_watch;
    std::vector<std::vector<store::ElfFile>> owned;
    const auto facts = wheel_facts(store, packages, jobs, owned);
    const double facts_s = facts_watch.total();
    std::size_t native = 0;
    for (std::size_t i = 0; i < packages.size(); ++i) {
        in.wheels[i].files = facts[i];
        native += facts[i]->size();
    }
    LinkReport report;
    if (!in.wheels.empty()) report = env::link_environment(in);
    report.native_files = native;
    report.facts_seconds = facts_s;
    report.host_files.insert(report.host_files.end(), searched.begin(), searched.end());
    if (cached) write_link_cache(store.home(), file, report);
    report.seconds = watch.total();
    return report;
}

LinkReport check_generation_links(const store::Store& store, const env::Generation& g,
                                  const std::vector<store::WheelFiles>& wheels,
                                  const env::Interpreter& interpreter, unsigned jobs) {
    std::vector<LinkPackage> packages;
    for (std::size_t i = 0; i < g.packages.size() && i < wheels.size(); ++i)
        packages.push_back({g.packages[i].name, g.packages[i].version, &wheels[i]});
    std::optional<lock::LockFile> lock;
    if (auto text = env::read_generation_lock(g.path)) {
        auto parsed = lock::parse_lock_file(g.path / ".envbox" / "pylock.toml", std::move(*text));
        if (parsed) lock = std::move(*parsed);  // one that does not read: no dependencies
    }
    LinkLock given;
    if (lock) given = {&lock->pylock, lock->tool ? lock->tool->cuda : ""};
    return check_links(store, packages, interpreter, given, jobs, /*cached=*/false);
}

void mark_allowed(LinkReport& report, const lock::Manifest* manifest, bool allow_mixed_cuda) {
    std::set<std::string> allowed;
    if (manifest)
        for (const auto& p : manifest->install_allow_unlinked)
            allowed.insert(p.name);
    for (auto& f : report.findings)
        f.allowed =
            f.refuses() && (allowed.count(f.package) ||
                            (f.kind == env::LinkFinding::Kind::cuda_line && allow_mixed_cuda));
}

std::vector<env::LinkFinding> refuse_unlinked(LinkReport& report, const std::string& env,
                                              const lock::Manifest* manifest, bool allow_mixed_cuda,
                                              const fs::path& lock_path) {
    mark_allowed(report, manifest, allow_mixed_cuda);
    std::vector<env::LinkFinding> cuda, symbols, notes;
    for (const auto& f : report.findings) {
        if (!f.refuses() || f.allowed)
            notes.push_back(f);
        else
            (f.kind == env::LinkFinding::Kind::cuda_line ? cuda : symbols).push_back(f);
    }
    const std::string fix = "\nrefusing to create " + env + " from " + lock_path.string() +
                            "; its current generation stays as it is (lock another version, or "
                            "name the package in [install].allow-unlinked if it is really meant)";
    if (!cuda.empty())
        throw Error(
            ErrorCode::invalid_input,
            "native files of " + env + " link another CUDA line:" + link_messages(cuda) + fix);
    if (!symbols.empty())
        throw Error(ErrorCode::unlinked, "native files of " + env +
                                             " need symbols the environment's libraries do not "
                                             "export (built for another version of them):" +
                                             link_messages(symbols) + fix);
    return notes;
}

}  // namespace envbox::ops
