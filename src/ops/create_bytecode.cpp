// `create`'s bytecode: which keys, what the store lacks, and the compile tasks that run in the
// fetch's pool (contracts in create_steps.hpp; the design in docs/ARCHITECTURE.md, "Bytecode").

#include <algorithm>
#include <atomic>
#include <chrono>

#include "create_steps.hpp"
#include "envbox/util/error.hpp"

namespace fs = std::filesystem;

namespace envbox::ops::create_steps {
namespace {

std::size_t file_index(const store::WheelFiles& w, const store::BytecodeSource& s) {
    return static_cast<std::size_t>(s.member - w.files.data());
}

}  // namespace

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

// One (item, key) being compiled: a slot per member of the wheel (by file index), filled by
// whichever task compiles it: an ingest task while the member is in memory, or a compile task
// once the wheel is stored.
struct BytecodeTasks::State {
    Item* item = nullptr;
    std::size_t key = 0;  // into item->bytecode
    std::vector<std::optional<store::BytecodeFile>> done;
    std::vector<std::uint8_t> tried;             // by file index: compiled or refused already
    std::vector<store::BytecodeSource> sources;  // set once the wheel is stored
    std::atomic<std::size_t> failed{0}, compiled{0};
    std::atomic<std::size_t> batches_left{0};
    std::atomic<std::int64_t> nanoseconds{0};
};

BytecodeTasks::BytecodeTasks(const store::Store& store, const env::Interpreter& in, unsigned jobs,
                             Progress& progress)
    : store_(store), compiler_(in, jobs), progress_(progress) {}

BytecodeTasks::~BytecodeTasks() = default;

BytecodeTasks::State& BytecodeTasks::state(Item& item, std::size_t key, std::size_t files) {
    std::lock_guard lock(mutex_);
    auto& slot = by_item_[{&item, key}];
    if (!slot) {
        auto st = std::make_unique<State>();
        st->item = &item;
        st->key = key;
        st->done.resize(files);
        st->tried.resize(files);
        slot = st.get();
        states_.push_back(std::move(st));
    }
    return *slot;
}

std::chrono::steady_clock::duration BytecodeTasks::compile_one(State& st, std::size_t file,
                                                               const store::WheelFile& m,
                                                               std::string_view dfile,
                                                               store::Ingest* ingest,
                                                               std::string_view content) {
    const auto started = std::chrono::steady_clock::now();
    const ItemBytecode& b = st.item->bytecode[st.key];
    // Levels past 2 compile as 2 (their file name keeps the level), as Python does.
    const int level = std::min(b.key.optimize, 2);
    env::CompileResult r =
        ingest ? compiler_.compile_source(content, dfile, level)
               : compiler_.compile(store_.object_path(m.digest, m.executable), dfile, level);
    st.tried[file] = 1;
    if (!r.pyc) {
        ++st.failed;
    } else {
        store::BytecodeFile f;
        f.source = m.path;
        f.source_digest = m.digest;
        // From an ingest, staged with its wheel's objects: stored only if the wheel is.
        f.pyc = ingest ? ingest->stage_object(*r.pyc) : store_.put_object(*r.pyc, b.replace);
        f.pyc.path = m.path;
        st.done[file] = std::move(f);
        ++st.compiled;
    }
    return std::chrono::steady_clock::now() - started;
}

store::Ingest::MemberSink BytecodeTasks::sink(Item& item, store::Ingest& ingest) {
    std::optional<std::string> dist_info = ingest.dist_info();
    if (!dist_info) return {};  // a wheel finish refuses: nothing to compile
    std::vector<State*> states;
    // A repair that replaces damaged .pyc objects stores them itself, after the wheel.
    for (std::size_t k = 0; k < item.bytecode.size(); ++k)
        if (item.bytecode[k].compile && !item.bytecode[k].replace)
            states.push_back(&state(item, k, ingest.file_count()));
    if (states.empty()) return {};
    return [this, &ingest, states = std::move(states), dist_info = std::move(*dist_info)](
               std::size_t file, const store::WheelFile& f, std::string_view content) {
        const std::optional<std::string> dfile = store::bytecode_dfile(f.path, dist_info);
        if (!dfile) return;
        for (State* st : states)
            st->nanoseconds += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   compile_one(*st, file, f, *dfile, &ingest, content))
                                   .count();
    };
}

void BytecodeTasks::add(Item& item, TaskPool& pool) {
    // Batches of about 256 KiB of source (at most 64 files): one round trip per file to a
    // warm worker, and enough tasks to spread a torch-sized wheel over every core.
    constexpr std::uint64_t kBatchBytes = 256 << 10;
    constexpr std::size_t kBatchFiles = 64;
    const store::WheelFiles& wheel = *item.wheel;
    for (std::size_t k = 0; k < item.bytecode.size(); ++k) {
        if (!item.bytecode[k].compile) continue;
        State& st = state(item, k, wheel.files.size());
        st.sources = store::bytecode_sources(wheel);
        // What the ingest compiled while the members were in memory is done; the rest (members
        // too large for memory, a wheel stored before) is read from the store.
        std::vector<std::size_t> left;  // into st.sources
        for (std::size_t s = 0; s < st.sources.size(); ++s)
            if (!st.tried[file_index(wheel, st.sources[s])]) left.push_back(s);
        // The batches first, then their tasks: the last batch to finish advances the progress.
        std::vector<std::pair<std::size_t, std::size_t>> batches;  // [begin, end) of `left`
        std::vector<std::uint64_t> bytes;
        for (std::size_t begin = 0; begin < left.size();) {
            std::size_t end = begin;
            std::uint64_t n = 0;
            while (end < left.size() && end - begin < kBatchFiles && n < kBatchBytes)
                n += st.sources[left[end++]].member->size;
            batches.emplace_back(begin, end);
            bytes.push_back(n);
            begin = end;
        }
        if (batches.empty()) {
            progress_.advance(1);
            continue;
        }
        st.batches_left = batches.size();
        auto shared_left = std::make_shared<const std::vector<std::size_t>>(std::move(left));
        for (std::size_t j = 0; j < batches.size(); ++j) {
            // Compiling costs more per byte than ingest's writes: weigh it so.
            pool.add(bytes[j] * 4, [this, &st, &wheel, shared_left, range = batches[j]](TaskPool&) {
                std::chrono::steady_clock::duration spent{};
                for (std::size_t x = range.first; x < range.second; ++x) {
                    const store::BytecodeSource& src = st.sources[(*shared_left)[x]];
                    spent += compile_one(st, file_index(wheel, src), *src.member, src.dfile,
                                         nullptr, {});
                }
                st.nanoseconds +=
                    std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count();
                if (--st.batches_left == 0) progress_.advance(1);
            });
        }
    }
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
