// `create`'s bytecode: which keys, what the store lacks, and the compile tasks that run in the
// fetch's pool (contracts in create_steps.hpp; the design in docs/ARCHITECTURE.md, "Bytecode").

#include <algorithm>
#include <atomic>
#include <chrono>

#include "create_steps.hpp"
#include "envbox/util/error.hpp"

namespace fs = std::filesystem;

namespace envbox::ops::create_steps {

std::vector<store::BytecodeKey> bytecode_keys(const env::Interpreter& in,
                                              const lock::Manifest* manifest,
                                              const CreateOptions& opt, Progress& progress) {
    bool on = opt.compile.value_or(!manifest || manifest->install_compile.value_or(true));
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
            item.bytecode.push_back({k, std::nullopt, !item.wheel, false});
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

// One (item, key) being compiled: a slot per source, filled by whichever task compiles it.
struct BytecodeTasks::State {
    Item* item = nullptr;
    std::size_t key = 0;  // into item->bytecode
    std::vector<store::BytecodeSource> sources;
    std::vector<std::optional<store::BytecodeFile>> done;
    std::atomic<std::size_t> failed{0}, compiled{0};
    std::atomic<std::size_t> batches_left{0};
    std::atomic<std::int64_t> nanoseconds{0};
};

BytecodeTasks::BytecodeTasks(const store::Store& store, const env::Interpreter& in, unsigned jobs,
                             Progress& progress)
    : store_(store), compiler_(in, jobs), progress_(progress) {}

BytecodeTasks::~BytecodeTasks() = default;

void BytecodeTasks::add(Item& item, TaskPool& pool) {
    // Batches of about 256 KiB of source (at most 64 files): one round trip per file to a
    // warm worker, and enough tasks to spread a torch-sized wheel over every core.
    constexpr std::uint64_t kBatchBytes = 256 << 10;
    constexpr std::size_t kBatchFiles = 64;
    for (std::size_t k = 0; k < item.bytecode.size(); ++k) {
        if (!item.bytecode[k].compile) continue;
        auto st = std::make_unique<State>();
        st->item = &item;
        st->key = k;
        st->sources = store::bytecode_sources(*item.wheel);
        st->done.resize(st->sources.size());
        State* raw = st.get();
        {
            std::lock_guard lock(mutex_);
            states_.push_back(std::move(st));
        }
        // The batches first, then their tasks: the last batch to finish advances the progress.
        std::vector<std::pair<std::size_t, std::uint64_t>> batches;  // end, bytes
        for (std::size_t begin = 0; begin < raw->sources.size();) {
            std::size_t end = begin;
            std::uint64_t bytes = 0;
            while (end < raw->sources.size() && end - begin < kBatchFiles && bytes < kBatchBytes)
                bytes += raw->sources[end++].member->size;
            batches.emplace_back(end, bytes);
            begin = end;
        }
        if (batches.empty()) {
            progress_.advance(1);
            continue;
        }
        raw->batches_left = batches.size();
        std::size_t begin = 0;
        for (const auto& [end, bytes] : batches) {
            pool.add(
                bytes,
                [this, raw, begin, end = end](TaskPool&) {
                    run(*raw, begin, end);
                    if (--raw->batches_left == 0) {
                        std::lock_guard lock(mutex_);
                        raw->item->compiled_at = std::max(raw->item->compiled_at, clock_.total());
                        progress_.advance(1);
                    }
                },
                kCompileLane);
            begin = end;
        }
    }
}

void BytecodeTasks::run(State& st, std::size_t begin, std::size_t end) {
    const auto started = std::chrono::steady_clock::now();
    const ItemBytecode& b = st.item->bytecode[st.key];
    for (std::size_t i = begin; i < end; ++i) {
        const store::BytecodeSource& src = st.sources[i];
        const store::WheelFile& m = *src.member;
        // Levels past 2 compile as 2 (their file name keeps the level), as Python does.
        env::CompileResult r = compiler_.compile(store_.object_path(m.digest, m.executable),
                                                 src.dfile, std::min(b.key.optimize, 2));
        if (!r.pyc) {
            ++st.failed;
            continue;
        }
        store::BytecodeFile f;
        f.source = m.path;
        f.source_digest = m.digest;
        f.pyc = store_.put_object(*r.pyc, b.replace);
        f.pyc.path = m.path;
        st.done[i] = std::move(f);
        ++st.compiled;
    }
    st.nanoseconds += std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - started)
                          .count();
}

std::vector<const store::WheelBytecode*> BytecodeTasks::finish(CreateResult& result) {
    std::vector<const store::WheelBytecode*> out;
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
        out.push_back(&*b.list);
        result.compiled += st->compiled;
        result.compile_failed += st->failed;
        result.compile_s += static_cast<double>(st->nanoseconds.load()) / 1e9;
    }
    result.compile_workers = compiler_.started();
    return out;
}

}  // namespace envbox::ops::create_steps
