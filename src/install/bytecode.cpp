// An environment's bytecode: which keys, what the store lacks, and the compile tasks that run in
// the fetch's pool (contracts in install/bytecode.hpp; the design in docs/ARCHITECTURE.md,
// "Bytecode").

#include "envbox/install/bytecode.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <numeric>

#include "envbox/store/bytecode_layer.hpp"
#include "envbox/util/error.hpp"

namespace fs = std::filesystem;

namespace envbox::install {

std::vector<store::BytecodeKey> bytecode_keys(const env::Interpreter& in,
                                              const lock::Manifest* manifest,
                                              std::optional<bool> compile, Progress& progress) {
    bool on = compile.value_or(!manifest || manifest->install_compile.value_or(true));
    if (!on) return {};
    if (in.cache_tag.empty() || in.magic.empty()) {
        progress.note(in.executable.string() + " reports no bytecode cache tag: no .pyc files");
        return {};
    }
    std::string optimize;
    if (manifest)
        if (auto it = manifest->run_env.find("PYTHONOPTIMIZE"); it != manifest->run_env.end())
            optimize = it->second;
    std::vector<store::BytecodeKey> keys;
    for (int level : env::bytecode_levels(optimize))
        keys.push_back(env::bytecode_key(in, level));
    return keys;
}

void distrust_received_bytecode(std::vector<Item>& items) {
    for (auto& item : items)
        for (auto& b : item.bytecode)
            if (b.list && b.list->received) {
                b.list.reset();
                b.compile = true;
                b.replace = true;
            }
}

void take_received_bytecode(std::vector<Item>& items,
                            const std::map<std::string, fs::path>& layers) {
    for (auto& item : items)
        for (auto& b : item.bytecode)
            if (b.compile)
                if (auto it = layers.find(item.sha256 + "/" + b.key.name()); it != layers.end()) {
                    b.compile = false;
                    b.received = it->second;
                }
}

LayerAdoption::LayerAdoption(const store::Store& store, Item& item, std::size_t k,
                             const Stopwatch& clock)
    : store_(store), item_(item), k_(k), clock_(clock) {}

LayerAdoption::~LayerAdoption() = default;

void LayerAdoption::arrived(TaskPool& pool) {
    const fs::path& file = item_.bytecode.at(k_).received;
    std::error_code ec;
    const std::uint64_t size = fs::file_size(file, ec);
    // The biggest work first, as for ingest: the whole file's hash before any of its parts.
    pool.add(ec ? 0 : size, [this, size](TaskPool& more) {
        const ItemBytecode& b = item_.bytecode.at(k_);
        // The layer's file is named by its digest (cache/downloads/<sha256>.pyc-layer).
        auto layer = std::make_unique<store::ReceivedLayer>(
            store_, b.received, b.received.stem().string(), item_.sha256, b.key,
            "the received bytecode of " + item_.filename + " for " + b.key.name());
        store::ReceivedLayer& l = *layer;
        // Read before any task is queued: the last task to finish closes the layer.
        const std::size_t parts = l.part_count();
        std::vector<std::uint64_t> bytes(parts);
        for (std::size_t part = 0; part < parts; ++part)
            bytes[part] = l.part_bytes(part);
        left_ = parts + 2;  // the parts, the digest, the sources
        {
            // Owned here before any task can use it; the sources task once both are there.
            const std::lock_guard<std::mutex> lock(mutex_);
            layer_ = std::move(layer);
            if (wheel_) add_sources_task(more);
        }
        more.add(size, [this, &l](TaskPool&) {
            l.check_digest();
            done();
        });
        // A damaged `.pyc` found by content (`replace`) is stored again, not kept.
        for (std::size_t part = 0; part < parts; ++part)
            more.add(bytes[part], [this, &l, part, replace = b.replace](TaskPool&) {
                l.store_part(part, replace);
                done();
            });
    });
}

void LayerAdoption::wheel_stored(TaskPool& pool) {
    const std::lock_guard<std::mutex> lock(mutex_);
    wheel_ = true;
    if (layer_) add_sources_task(pool);
}

void LayerAdoption::add_sources_task(TaskPool& pool) {
    pool.add(UINT64_MAX / 2, [this](TaskPool&) {
        layer_->check_sources(*item_.wheel);
        done();
    });
}

void LayerAdoption::done() {
    if (--left_ != 0) return;
    ItemBytecode& b = item_.bytecode.at(k_);
    b.list = layer_->adopted();
    b.adopted_at = clock_.total();
    // Its file is done with: closed and removed now (every task has returned), so publish's
    // syncfs never writes it to disk.
    layer_.reset();
    std::error_code ignored;
    fs::remove(b.received, ignored);
}

void count_received_bytecode(std::vector<Item>& items, BytecodeReport& report,
                             std::vector<const store::WheelBytecode*>& lists) {
    for (auto& item : items)
        for (auto& b : item.bytecode) {
            if (b.received.empty()) continue;
            if (!b.list) throw Error(ErrorCode::generic, "received bytecode was not adopted");
            lists.push_back(&*b.list);
            report.received += b.list->files.size();
        }
}

std::size_t bytecode_lists_to_compile(const std::vector<Item>& items) {
    std::size_t n = 0;
    for (const auto& item : items)
        for (const auto& b : item.bytecode)
            n += b.compile;
    return n;
}

void plan_bytecode(const store::Store& store, std::vector<Item>& items,
                   const std::vector<store::BytecodeKey>& keys, bool hash, unsigned jobs,
                   Progress& progress) {
    for (auto& item : items) {
        item.bytecode.clear();
        for (const auto& k : keys)
            item.bytecode.push_back({k, std::nullopt, !item.wheel, false, {}});
    }
    std::vector<std::string> damage(items.size());
    parallel_for(items.size(), jobs, [&](std::size_t i) {
        Item& item = items[i];
        // A wheel stored again for a damaged member keeps its bytecode lists when their .pyc
        // objects are whole: generations that link them verify against the same lists.
        if (!item.wheel && !item.repair) return;
        for (auto& b : item.bytecode) {
            b.list = store.load_bytecode(item.sha256, b.key);
            if (!b.list) {
                b.compile = true;
                continue;
            }
            b.compile = false;
            if (auto d = store.damaged_objects(*b.list, hash)) {
                if (damage[i].empty()) damage[i] = d->first;
                b.list.reset();
                b.compile = true;
                b.replace = true;
            }
        }
    });
    for (std::size_t i = 0; i < items.size(); ++i)
        if (!damage[i].empty())
            progress.note("store object " + damage[i] + "; compiling " + items[i].filename +
                          " again");
}

namespace {

// Batches of about 256 KiB of source (at most 64 files): one round trip per file to a warm
// worker, and enough tasks to spread a torch-sized wheel over every core. Returns each batch's
// end and bytes, for `n` files of sizes `size(i)`.
template <class Size>
std::vector<std::pair<std::size_t, std::uint64_t>> batches(std::size_t n, Size size) {
    constexpr std::uint64_t kBatchBytes = 256 << 10;
    constexpr std::size_t kBatchFiles = 64;
    std::vector<std::pair<std::size_t, std::uint64_t>> out;
    for (std::size_t begin = 0; begin < n;) {
        std::size_t end = begin;
        std::uint64_t bytes = 0;
        while (end < n && end - begin < kBatchFiles && bytes < kBatchBytes)
            bytes += size(end++);
        out.emplace_back(end, bytes);
        begin = end;
    }
    return out;
}

// The path inside site-packages of a member that may compile before its wheel is stored: a
// module by its path alone (the .dist-info is not known yet) within the compiler's bound. A
// source past the bound is refused once, by `run`, with the rest.
std::optional<std::string> early_dfile(const store::WheelFile& f) {
    if (f.size > env::kMaxBytecodeSource) return std::nullopt;
    return store::bytecode_dfile(f.path, {});
}

std::chrono::nanoseconds since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                t);
}

}  // namespace

// One member's module for one key: not compiled yet, being compiled by the task that claimed
// it, or done, with its `.pyc` (none: the interpreter refused it) held until the wheel is
// stored. Only `run` waits on a slot, and only for a task that is compiling it; a slot `run`
// finds done was compiled by an early task.
struct BytecodeTasks::Slot {
    enum : int { idle, compiling, done };
    std::atomic<int> state{idle};
    std::optional<std::string> pyc;
    // The new state, and every task waiting on this slot woken: a slot left compiling would
    // hang the one that waits for it.
    void settle(int to) {
        state.store(to);
        state.notify_all();
    }
};

// One (item, key) being compiled: a slot per member of the wheel (in file-list order), and,
// once the wheel is stored, its sources and a place for each one's stored `.pyc`.
struct BytecodeTasks::State {
    explicit State(std::size_t members) : slots(members) {}
    Item* item = nullptr;
    std::size_t key = 0;  // into item->bytecode
    std::vector<Slot> slots;
    std::vector<store::BytecodeSource> sources;
    std::vector<std::optional<store::BytecodeFile>> done;
    std::atomic<std::size_t> failed{0}, compiled{0}, early{0};
    std::atomic<std::size_t> batches_left{0};
    std::atomic<std::int64_t> nanoseconds{0};
};

// A module of a wheel still being stored: its member, its path inside site-packages, and where
// its bytes are (`source`; for a staged object, `moved_to` is the store's path it may have been
// renamed to meanwhile).
struct BytecodeTasks::Early {
    std::size_t index = 0;
    std::string dfile;
    fs::path source, moved_to;
};

BytecodeTasks::BytecodeTasks(const store::Store& store, const env::Interpreter& in, unsigned jobs,
                             Progress& progress, std::set<std::string> replaced)
    : store_(store), compiler_(in, jobs), progress_(progress), replaced_(std::move(replaced)) {}

BytecodeTasks::~BytecodeTasks() = default;

std::vector<BytecodeTasks::State*> BytecodeTasks::states_of(Item& item, std::size_t members) {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = by_item_.try_emplace(&item);
    if (fresh)
        for (std::size_t k = 0; k < item.bytecode.size(); ++k) {
            if (!item.bytecode[k].compile) continue;
            auto st = std::make_unique<State>(members);
            st->item = &item;
            st->key = k;
            it->second.push_back(st.get());
            states_.push_back(std::move(st));
        }
    return it->second;
}

void BytecodeTasks::expect(Item& item, std::size_t members) {
    states_of(item, members);
}

std::uint64_t BytecodeTasks::ingest_priority(std::uint64_t cost,
                                             std::span<const store::WheelFile> files) {
    std::uint64_t source = 0;
    for (const auto& f : files)
        if (early_dfile(f)) source += f.size;
    // Above any task without modules (costs stay below 2^62: a wheel's size is bounded far
    // lower) and below the fetch tasks (UINT64_MAX - k).
    constexpr std::uint64_t kModules = std::uint64_t{1} << 62;
    return source > 0 ? kModules + source : std::min(cost, kModules - 1);
}

void BytecodeTasks::add_ingested(Item& item, std::vector<store::IngestedMember> members,
                                 TaskPool& pool) {
    std::vector<State*> states;
    {
        std::lock_guard lock(mutex_);
        auto it = by_item_.find(&item);
        if (it == by_item_.end() || it->second.empty()) return;
        states = it->second;
    }
    std::vector<Early> early;
    std::vector<std::uint64_t> sizes;
    for (auto& m : members) {
        auto dfile = early_dfile(m.file);
        if (!dfile || (m.staged.empty() && replaced_.count(m.file.digest))) continue;
        fs::path object = store_.object_path(m.file.digest, m.file.executable);
        if (m.staged.empty())
            early.push_back({m.index, std::move(*dfile), std::move(object), {}});
        else
            early.push_back({m.index, std::move(*dfile), std::move(m.staged), std::move(object)});
        sizes.push_back(m.file.size);
    }
    std::size_t begin = 0;
    for (const auto& [end, bytes] :
         batches(early.size(), [&](std::size_t i) { return sizes[i]; })) {
        std::vector<Early> batch(std::make_move_iterator(early.begin() + begin),
                                 std::make_move_iterator(early.begin() + end));
        for (State* st : states)
            pool.add(
                bytes, [this, st, batch](TaskPool&) { run_early(*st, batch); }, kCompileLane);
        begin = end;
    }
}

void BytecodeTasks::run_early(State& st, const std::vector<Early>& batch) {
    const auto started = std::chrono::steady_clock::now();
    const int level = std::min(st.item->bytecode[st.key].key.optimize, 2);
    for (const Early& e : batch) {
        if (held_.load() >= kMaxHeldBytes) break;  // the rest compile once the wheel is stored
        Slot& slot = st.slots.at(e.index);
        int expected = Slot::idle;
        if (!slot.state.compare_exchange_strong(expected, Slot::compiling)) continue;
        env::CompileResult r;
        try {
            r = compiler_.compile(e.source, e.moved_to, e.dfile, level);
        } catch (...) {
            slot.settle(Slot::idle);  // no worker could be started: `run` must not wait on it
            throw;
        }
        if (r.missing) {
            slot.settle(Slot::idle);  // its ingest failed and took the staging directory
            continue;
        }
        if (r.pyc) held_ += r.pyc->size();
        slot.pyc = std::move(r.pyc);
        slot.settle(Slot::done);
    }
    st.nanoseconds += since(started).count();
}

void BytecodeTasks::add(Item& item, TaskPool& pool) {
    for (State* st : states_of(item, item.wheel->files.size())) {
        st->sources = store::bytecode_sources(*item.wheel);
        st->done.resize(st->sources.size());
        // The batches first, then their tasks: the last batch to finish advances the progress.
        auto split =
            batches(st->sources.size(), [&](std::size_t i) { return st->sources[i].member->size; });
        if (split.empty()) {
            progress_.advance(1);
            continue;
        }
        st->batches_left = split.size();
        std::size_t begin = 0;
        for (const auto& [end, bytes] : split) {
            std::vector<std::size_t> batch(end - begin);
            std::iota(batch.begin(), batch.end(), begin);
            pool.add(
                bytes, [this, st, batch](TaskPool& more) { run(*st, batch, false, more); },
                kCompileLane);
            begin = end;
        }
    }
}

void BytecodeTasks::run(State& st, const std::vector<std::size_t>& batch, bool wait,
                        TaskPool& pool) {
    const auto started = std::chrono::steady_clock::now();
    const ItemBytecode& b = st.item->bytecode[st.key];
    // Levels past 2 compile as 2 (their file name keeps the level), as Python does.
    const int level = std::min(b.key.optimize, 2);
    // Source `i`'s `.pyc`, from its slot or compiled here; false when an early task is
    // compiling it and `wait` is false.
    auto take = [&](std::size_t i) {
        const store::BytecodeSource& src = st.sources[i];
        const store::WheelFile& m = *src.member;
        Slot& slot =
            st.slots.at(static_cast<std::size_t>(src.member - st.item->wheel->files.data()));
        std::optional<std::string> pyc;
        bool early = false;
        for (;;) {
            int state = slot.state.load();
            if (state == Slot::done) {
                pyc = std::move(slot.pyc);
                early = true;
                if (pyc) held_ -= pyc->size();
                break;
            }
            if (state == Slot::compiling) {
                if (!wait) return false;
                const auto waiting = std::chrono::steady_clock::now();
                slot.state.wait(Slot::compiling);
                waited_ns_ += since(waiting).count();
                continue;
            }
            if (slot.state.compare_exchange_strong(state, Slot::compiling)) {
                try {
                    pyc = compiler_
                              .compile(store_.object_path(m.digest, m.executable), src.dfile, level)
                              .pyc;
                } catch (...) {
                    slot.settle(Slot::idle);
                    throw;
                }
                slot.settle(Slot::done);
                break;
            }
        }
        if (!pyc) {
            ++st.failed;
            return true;
        }
        store::BytecodeFile f;
        f.source = m.path;
        f.source_digest = m.digest;
        f.pyc = store_.put_object(*pyc, b.replace);
        f.pyc.path = m.path;
        st.done[i] = std::move(f);
        ++st.compiled;
        st.early += early;
        return true;
    };
    // A module an early task is compiling is passed over, and taken by a task of its own
    // queued below every other compile task (so the wheel's compiling ends with the lane's),
    // by when the early task is long done: waiting here would leave this thread's worker idle
    // behind the early task (a convoy that kept a quarter of the GPU host's cores idle while
    // the compiling ran on after the ingest).
    std::vector<std::size_t> passed;
    for (std::size_t i : batch)
        if (!take(i)) passed.push_back(i);
    if (!passed.empty()) {
        ++st.batches_left;
        pool.add(
            0, [this, &st, passed](TaskPool& more) { run(st, passed, true, more); }, kCompileLane);
    }
    st.nanoseconds += since(started).count();
    if (--st.batches_left == 0) {
        std::lock_guard lock(mutex_);
        st.item->compiled_at = std::max(st.item->compiled_at, clock_.total());
        progress_.advance(1);
    }
}

CompiledLists BytecodeTasks::finish() {
    CompiledLists out;
    BytecodeReport& result = out.report;
    for (auto& st : states_) {
        ItemBytecode& b = st->item->bytecode[st->key];
        store::WheelBytecode list;
        list.wheel_sha256 = st->item->sha256;
        list.key = b.key;
        list.sources = st->sources.size();
        for (auto& f : st->done)
            if (f) list.files.push_back(std::move(*f));
        b.list = std::move(list);
        b.compile = false;
        out.lists.push_back(&*b.list);
        result.compiled += st->compiled;
        result.compiled_early += st->early;
        result.compile_failed += st->failed;
        result.compile_s += static_cast<double>(st->nanoseconds.load()) / 1e9;
    }
    result.compile_workers = compiler_.started();
    result.compile_wait_s = static_cast<double>(waited_ns_.load()) / 1e9;
    return out;
}

}  // namespace envbox::install
