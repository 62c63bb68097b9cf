// The fetch into the store: what the store lacks is downloaded (or read from a local path) and
// ingested in one pool over all wheels, then published (contracts in install/fetch.hpp).

#include "envbox/install/fetch.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include "envbox/index/fetch.hpp"
#include "envbox/index/http.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::install {

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

namespace {

// --offline: every missing item must be a local file or a finished download already.
void check_offline(const std::vector<Item>& items, const std::vector<std::size_t>& missing,
                   const FetchPlan& plan) {
    for (std::size_t i : missing) {
        auto req = artifact_request(items[i], plan.indexes);
        std::error_code ec;
        if (!index::local_artifact_path(req, plan.lock_dir) &&
            !fs::exists(index::download_path(plan.downloads, req.sha256), ec))
            throw Error(ErrorCode::network,
                        "--offline: " + items[i].filename +
                            " is not in the store and would be downloaded from " +
                            index::redact_url(req.location));
    }
}

// Received (pull, unpack; the artifact rule): each missing item must be a wheel the artifact
// carried, now in `downloads`; the lock's own path or URL, which could name any local file or
// host, is never read.
void check_received(const std::vector<Item>& items, const std::vector<std::size_t>& missing,
                    const FetchPlan& plan) {
    for (std::size_t i : missing) {
        const Item& item = items[i];
        const lock::Package& p = *item.package;
        const std::string label = p.name + (p.version ? " " + p.version->str() : "");
        const std::string named = !item.file        ? ""
                                  : item.file->path ? *item.file->path
                                                    : item.file->url.value_or("");
        if (!plan.received->wheels.count(item.sha256))
            throw Error(
                ErrorCode::integrity,
                label + ": the lock names " + printable(item.filename) +
                    (named.empty() ? "" : " (" + printable(index::redact_url(named)) + ")") +
                    ", a wheel the received artifact does not carry and the store "
                    "lacks; a pulled or unpacked environment installs the artifact's "
                    "wheels and the store's only");
        std::error_code ec;
        const fs::path file = index::download_path(plan.downloads, item.sha256);
        if (!fs::exists(file, ec) && !plan.streams(file))
            throw Error(ErrorCode::integrity,
                        label + ": " + printable(item.filename) + " was not received" +
                            (item.repair ? " (the store's copy is damaged, and the artifact's was "
                                           "not fetched since the store had it)"
                                         : ""));
    }
}

// One pool for the whole fetch-and-ingest: each wheel's fetch task (downloads first, largest
// wheels first) adds that wheel's ingest tasks, and the biggest pieces of work of all wheels run
// first, so torch's gigabyte library starts at once and its thousands of small files spread over
// every core; when modules are compiled, the tasks that hold them come before all others
// (`BytecodeTasks::ingest_priority`), so the compiler starts at once. Thread-safety: each wheel's
// `Pending` is touched by its own tasks only; the last ingest task of a wheel (counted down
// atomically) finishes it.
class FetchPool {
  public:
    FetchPool(store::Store& store, std::vector<Item>& items, const FetchPlan& plan,
              Progress& progress, BytecodeTasks* bytecode)
        : store_(store),
          items_(items),
          plan_(plan),
          progress_(progress),
          http_(plan.http),
          pending_(items.size()),
          bytecode_(bytecode) {}

    // A download that was never ingested stays for the next run; one that proved bad goes.
    ~FetchPool() {
        for (auto& p : pending_) {
            p.ingest.reset();
            std::error_code ec;
            if (p.failed && !p.downloaded.empty()) fs::remove(p.downloaded, ec);
        }
    }

    // Runs the fetch and ingest of `missing` (in that order of priority) to the end, and the
    // compiling of stored wheels that lack bytecode beside it; a fetched wheel's compile tasks
    // join the pool once it is stored.
    void run(const std::vector<std::size_t>& missing) {
        const unsigned lanes = bytecode_ ? BytecodeTasks::kLanes : 1;
        // Streamed blobs download in a lane of their own (the last), beside the ingest.
        const bool streams = plan_.received && !plan_.received->streamed.empty();
        const unsigned fetch_lane = streams ? lanes : 0;
        TaskPool pool(plan_.jobs, lanes + (streams ? 1 : 0));
        std::vector<std::uint64_t> rank(items_.size(), UINT64_MAX / 2);
        for (std::size_t k = 0; k < missing.size(); ++k) {
            const std::size_t i = missing[k];
            rank[i] = UINT64_MAX - 2 * k;
            pool.add(
                rank[i], [this, i](TaskPool& tasks) { fetch(i, tasks); }, fetch_lane);
        }
        add_layer_fetches(rank, pool, fetch_lane);
        for (std::size_t i = 0; i < items_.size(); ++i) {
            if (!items_[i].wheel) continue;
            if (bytecode_) bytecode_->add(items_[i], pool);
            add_received_tasks(i, pool);
        }
        pool.run();
    }

  private:
    struct Pending {
        std::unique_ptr<store::Ingest> ingest;
        std::atomic<std::size_t> remaining{0};
        fs::path downloaded;  // removed once its wheel is stored, or when it proves bad
        std::atomic<bool> failed{false};
        std::vector<std::optional<store::ElfFile>> elf;  // its members' facts, once stored
        std::atomic<std::size_t> elf_remaining{0};
    };

    // Runs `fn`; an error gets the package and location as context, and an integrity error
    // marks the wheel's download bad.
    template <class Fn>
    void with_context(std::size_t i, const std::string& location, Fn&& fn) {
        try {
            fn();
        } catch (Error& e) {
            if (e.code() == ErrorCode::integrity) pending_[i].failed = true;
            e.add_context("fetching " + items_[i].package->name + " from " +
                          index::redact_url(location));
            throw;
        }
    }

    // The fetch task of item `i`: its archive, local or downloaded, then its ingest tasks.
    void fetch(std::size_t i, TaskPool& tasks) {
        Item& item = items_[i];
        const index::ArtifactRequest req = artifact_request(item, plan_.indexes);
        Pending& p = pending_[i];
        with_context(i, req.location, [&] {
            // Local or downloaded, the archive is hashed by one of the ingest's own tasks,
            // beside the others, and nothing is stored unless it matches the lock.
            fs::path archive;
            const auto local = index::local_artifact_path(req, plan_.lock_dir);
            const fs::path received = index::download_path(plan_.downloads, req.sha256);
            std::error_code ec;
            if (plan_.received) {
                // The artifact's copy (check_received found it or it streams), whatever the
                // lock names.
                if (plan_.streams(received)) plan_.received->receive_blob(received);
                p.downloaded = received;
                archive = received;
            } else if (local && !fs::exists(*local, ec) && fs::exists(received, ec)) {
                // A lock's local path that is not on this machine, and the wheel that pull or
                // unpack put where a download goes: that (the ingest checks its sha256).
                p.downloaded = received;
                archive = received;
            } else if (local) {
                archive = *local;
            } else {
                p.downloaded = index::download_path(plan_.downloads, req.sha256);
                archive = index::download_artifact(
                    http_, req, plan_.downloads, [&](std::uint64_t n) { progress_.downloaded(n); });
            }
            p.ingest = std::make_unique<store::Ingest>(store_, archive, item.sha256, item.filename,
                                                       true, req.size);
            if (item.repair) p.ingest->replace_objects(item.replace);
        });
        const bool compiles = bytecode_ && std::any_of(item.bytecode.begin(), item.bytecode.end(),
                                                       [](const auto& b) { return b.compile; });
        if (compiles) bytecode_->expect(item, p.ingest->file_count());
        const std::size_t n = p.ingest->task_count();
        p.remaining = n;
        if (n == 0) return finish(i, req.location, tasks);
        for (std::size_t t = 0; t < n; ++t)
            tasks.add(compiles ? BytecodeTasks::ingest_priority(p.ingest->task_cost(t),
                                                                p.ingest->task_files(t))
                               : p.ingest->task_cost(t),
                      [this, i, t, compiles, location = req.location](TaskPool& more) {
                          with_context(i, location, [&] { pending_[i].ingest->run_task(t); });
                          // Its modules compile now, their .pyc held until the wheel is stored.
                          if (compiles)
                              bytecode_->add_ingested(
                                  items_[i], pending_[i].ingest->ingested_members(t), more);
                          if (--pending_[i].remaining == 0) finish(i, location, more);
                      });
    }

    // Item `i`'s last ingest task is done: its objects are in, its download removed, and its
    // modules are compiled next.
    void finish(std::size_t i, const std::string& location, TaskPool& tasks) {
        Item& item = items_[i];
        with_context(i, location, [&] { item.wheel = pending_[i].ingest->finish(&item.stats); });
        item.fetched = true;
        item.stored_at = clock_.total();
        pending_[i].ingest.reset();
        if (!pending_[i].downloaded.empty() && item.sdist) {
            // A received wheel built from an sdist: no URL could fetch it again, so its archive
            // is kept, once its file list is published (`kept_archives`).
        } else if (!pending_[i].downloaded.empty()) {
            std::error_code ignored;
            fs::remove(pending_[i].downloaded, ignored);
            pending_[i].downloaded.clear();
        }
        progress_.advance(1);
        if (bytecode_) bytecode_->add(item, tasks);
        add_received_tasks(i, tasks);
        if (plan_.elf_facts) add_elf_tasks(i, tasks);
    }

    // Each received layer is adopted once its file is there (streamed: downloaded right after
    // its wheel, `rank[i] - 1`) and finished once its wheel is stored (LayerAdoption).
    void add_layer_fetches(const std::vector<std::uint64_t>& rank, TaskPool& pool, unsigned lane) {
        for (std::size_t i = 0; i < items_.size(); ++i)
            for (std::size_t k = 0; k < items_[i].bytecode.size(); ++k) {
                const fs::path& layer = items_[i].bytecode[k].received;
                if (layer.empty()) continue;
                auto& adoption = adoptions_[{i, k}];
                adoption = std::make_unique<LayerAdoption>(store_, items_[i], k, clock_);
                if (!plan_.streams(layer)) {
                    adoption->arrived(pool);
                    continue;
                }
                pool.add(
                    rank[i] - 1,
                    [this, &layer, a = adoption.get()](TaskPool& tasks) {
                        plan_.received->receive_blob(layer);
                        a->arrived(tasks);
                    },
                    lane);
            }
    }

    // Item `i`'s wheel is stored: its received layers can finish.
    void add_received_tasks(std::size_t i, TaskPool& tasks) {
        for (std::size_t k = 0; k < items_[i].bytecode.size(); ++k)
            if (!items_[i].bytecode[k].received.empty()) adoptions_.at({i, k})->wheel_stored(tasks);
    }

    // The ELF facts of item `i`'s stored wheel: one task per native member in the ingest's lane
    // (the biggest first, beside the compiling), the last of which keeps them in the store.
    void add_elf_tasks(std::size_t i, TaskPool& tasks) {
        Pending& p = pending_[i];
        const std::vector<const store::WheelFile*> members =
            store::Store::elf_candidates(*items_[i].wheel);
        p.elf.resize(members.size());
        p.elf_remaining = members.size();
        if (members.empty()) return keep_elf(i);
        for (std::size_t k = 0; k < members.size(); ++k)
            tasks.add(members[k]->size, [this, i, k, member = members[k]](TaskPool&) {
                try {
                    pending_[i].elf[k] = store_.read_elf_member(*member);
                } catch (Error& e) {
                    e.add_context("reading the ELF facts of " + items_[i].package->name);
                    throw;
                }
                if (--pending_[i].elf_remaining == 0) keep_elf(i);
            });
    }

    void keep_elf(std::size_t i) {
        std::vector<store::ElfFile> facts;
        for (auto& f : pending_[i].elf)
            if (f) facts.push_back(std::move(*f));
        pending_[i].elf.clear();
        store_.keep_elf_facts(*items_[i].wheel, facts);
        items_[i].elf = std::move(facts);
    }

    const Stopwatch clock_;  // for each item's stored_at
    store::Store& store_;
    std::vector<Item>& items_;
    const FetchPlan& plan_;
    Progress& progress_;
    index::HttpClient http_;
    std::vector<Pending> pending_;
    BytecodeTasks* bytecode_;
    // (item, key) → its received layer's adoption, made before the pool runs.
    std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<LayerAdoption>> adoptions_;

  public:
    /// The downloads of stored items built from an sdist, to keep as the store's archives once
    /// the item's file list is published: (sha256, file).
    std::vector<std::pair<std::string, fs::path>> kept_archives() const {
        std::vector<std::pair<std::string, fs::path>> out;
        for (std::size_t i = 0; i < items_.size(); ++i)
            if (items_[i].sdist && items_[i].fetched && !pending_[i].downloaded.empty())
                out.emplace_back(items_[i].sha256, pending_[i].downloaded);
        return out;
    }
};

// The (at most) three items whose `at` came last, the last first (0: never), for -vv.
std::vector<const Item*> last_three(const std::vector<Item>& items, double Item::*at) {
    std::vector<const Item*> by_end;
    for (const auto& item : items)
        if (item.*at > 0) by_end.push_back(&item);
    std::sort(by_end.begin(), by_end.end(),
              [at](const Item* a, const Item* b) { return a->*at > b->*at; });
    if (by_end.size() > 3) by_end.resize(3);
    return by_end;
}

// Where the fetch's tail went: the wheels whose modules compiled last, and the wheels stored
// last with when their received bytecode was adopted.
void report_last(const std::vector<Item>& items, FetchReport& result) {
    for (const Item* item : last_three(items, &Item::compiled_at))
        result.last_compiled.push_back({item->package->name, item->stored_at, item->compiled_at});
    for (const Item* item : last_three(items, &Item::stored_at)) {
        double adopted = 0;
        for (const auto& b : item->bytecode)
            adopted = std::max(adopted, b.adopted_at);
        result.last_stored.push_back({item->package->name, item->stored_at, adopted});
    }
}

}  // namespace

FetchReport fetch_into_store(store::Store& store, std::vector<Item>& items, const FetchPlan& plan,
                             Progress& progress) {
    Stopwatch watch;
    FetchReport result;
    std::vector<std::size_t> missing =
        stored_or_missing(store, items, plan.verify_by_content, plan.jobs, progress);
    result.repaired =
        std::count_if(items.begin(), items.end(), [](const Item& i) { return i.repair; });
    if (!missing.empty() && plan.received) check_received(items, missing, plan);
    // A received item is never fetched by the lock's URL (check_received).
    if (!missing.empty() && plan.offline && !plan.received) check_offline(items, missing, plan);
    plan_bytecode(store, items, plan.bytecode, plan.verify_by_content, plan.jobs, progress);
    // A local create compiles for itself what an artifact brought earlier; a pull or an unpack
    // adopts it (unless --ignore-bytecode).
    if (!plan.received || plan.received->recompile_bytecode) distrust_received_bytecode(items);
    if (plan.received) take_received_bytecode(items, plan.received->bytecode);
    const std::size_t to_compile = bytecode_lists_to_compile(items);
    std::optional<BytecodeTasks> bytecode;
    if (to_compile > 0) {
        std::set<std::string> replaced;
        for (const auto& item : items)
            replaced.insert(item.replace.begin(), item.replace.end());
        bytecode.emplace(store, *plan.interpreter, plan.jobs, progress, std::move(replaced));
    }
    FetchPool pool(store, items, plan, progress, bytecode ? &*bytecode : nullptr);
    // Largest first, so the torch-sized wheel starts at once instead of being the last thing
    // running while every other worker idles.
    std::stable_sort(missing.begin(), missing.end(), [&](std::size_t x, std::size_t y) {
        const auto size = [&](std::size_t i) {  // a local package's wheel: none in the lock
            return items[i].file ? items[i].file->size.value_or(0) : 0;
        };
        return size(x) > size(y);
    });
    // One unit per wheel fetched and per wheel's bytecode compiled: both run in one pool.
    progress.phase(to_compile > 0 ? "Fetching and compiling" : "Fetching",
                   missing.size() + to_compile);
    std::uint64_t to_download = 0;
    for (std::size_t i : missing)
        if (auto req = artifact_request(items[i], plan.indexes);
            !index::local_artifact_path(req, plan.lock_dir))
            to_download += req.size.value_or(0);
    progress.download_total(to_download);
    result.jobs = plan.jobs;
    pool.run(missing);
    result.ingest_s = watch.lap();
    std::vector<const store::WheelFiles*> to_publish;
    for (std::size_t i : missing) {
        to_publish.push_back(&*items[i].wheel);
        result.fetched++;
        result.ingest += items[i].stats;
    }
    std::vector<const store::WheelBytecode*> compiled;
    if (bytecode) {
        CompiledLists done = bytecode->finish();
        compiled = std::move(done.lists);
        result.bytecode = done.report;
    }
    count_received_bytecode(items, result.bytecode, compiled);
    report_last(items, result);
    store.publish(to_publish, compiled);
    for (const auto& [sha, file] : pool.kept_archives())
        store.keep_archive(sha, file);
    result.publish_s = watch.lap();
    return result;
}

namespace {

// `path` holds `w`'s bytes: its sha256 (and size, when the lock gives one) checked.
bool holds_wheel(const fs::path& path, WantedWheel& w) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return false;
    std::uint64_t bytes = 0;
    if (to_hex(sha256_file(path, &bytes)) != w.sha256) return false;
    if (w.size && bytes != w.size) return false;
    w.size = bytes;
    return true;
}

}  // namespace

void locate_wheels(store::Store& store, std::span<WantedWheel> wheels, const LocateOptions& opt) {
    const fs::path& lock_dir = opt.lock_dir;
    index::HttpClient http(opt.http);
    std::mutex mutex;
    parallel_for(wheels.size(), opt.jobs, [&](std::size_t i) {
        WantedWheel& w = wheels[i];
        if (auto kept = w.size ? store.kept_archive(w.sha256, w.size) : std::nullopt) {
            w.path = *kept;
            return;
        }
        if (auto kept = w.size ? std::nullopt : store.kept_archive(w.sha256);
            kept && holds_wheel(*kept, w)) {
            w.path = *kept;
            return;
        }
        const fs::path cached = index::download_path(opt.downloads, w.sha256);
        const index::ArtifactRequest& req = w.request;
        try {
            if (auto local = index::local_artifact_path(req, lock_dir);
                local && holds_wheel(*local, w)) {
                w.path = *local;
                return;
            }
            if (!holds_wheel(cached, w)) {
                std::error_code ec;
                fs::remove(cached, ec);
                if (req.location.empty() || index::local_artifact_path(req, lock_dir))
                    throw Error(ErrorCode::integrity,
                                w.filename + " is in neither the store's archives nor " +
                                    cached.string() + ", and the lock's " +
                                    (req.location.empty()
                                         ? "entry names no URL"
                                         : "path " + req.location + " does not hold its bytes"));
                fs::create_directories(opt.downloads, ec);
                index::download_artifact(http, req, opt.downloads);
                if (!holds_wheel(cached, w)) {
                    fs::remove(cached, ec);
                    throw Error(ErrorCode::integrity, "hash mismatch for " + w.filename +
                                                          " downloaded again from " +
                                                          index::redact_url(req.location) +
                                                          ": not the lock's sha256 " + w.sha256);
                }
                std::lock_guard<std::mutex> g(mutex);
                w.refetched = true;
            }
            store.keep_archive(w.sha256, cached);
            w.path = store.archive_path(w.sha256);
            if (!fs::exists(w.path)) w.path = cached;  // no file list: not kept
        } catch (Error& e) {
            e.add_context("reading " + w.filename + " of " + opt.owner);
            throw;
        }
    });
}

}  // namespace envbox::install
