#pragma once
/// The bytecode of an environment's modules: which keys, what the store lacks, and the compile
/// tasks that run in the fetch's own pool (the design: docs/ARCHITECTURE.md, "Bytecode").

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "envbox/env/bytecode.hpp"
#include "envbox/env/interpreter.hpp"
#include "envbox/install/item.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/store/bytecode.hpp"
#include "envbox/store/bytecode_layer.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/progress.hpp"
#include "envbox/util/stopwatch.hpp"

namespace envbox::install {

/// What compiling an environment's modules did, for `create`'s report.
struct BytecodeReport {
    std::size_t compiled = 0;  ///< modules compiled into the store (0: every `.pyc` was there)
    std::size_t compiled_early = 0;   ///< of those, by early tasks (before the wheel's check)
    std::size_t compile_failed = 0;   ///< sources the interpreter refused (left without `.pyc`)
    std::size_t compile_workers = 0;  ///< interpreter workers started
    double compile_s = 0;             ///< thread-seconds spent compiling and storing
    double compile_wait_s = 0;        ///< of those, waiting on a module an early task was compiling
    std::size_t received = 0;         ///< `.pyc` files a received artifact carried, now stored
};

/// `BytecodeTasks::finish`'s answer: the lists to publish (each its item's) and the report.
struct CompiledLists {
    std::vector<const store::WheelBytecode*> lists;
    BytecodeReport report;
};

/// The keys the environment's modules are compiled for: none when `compile` (--no-compile: false)
/// or else the manifest's `[install].compile = false`; else the interpreter's, at level 0 and the
/// level the manifest's `[run].env` PYTHONOPTIMIZE asks for. An interpreter without a cache tag
/// gets none, with a note.
std::vector<store::BytecodeKey> bytecode_keys(const env::Interpreter& in,
                                              const lock::Manifest* manifest,
                                              std::optional<bool> compile, Progress& progress);

/// For each item the store holds, its bytecode lists for `keys`, and what must be compiled: a
/// missing list, or one with a missing or touched `.pyc` (with `hash`, one whose content is
/// wrong too). Items the store lacks are to be compiled for every key.
void plan_bytecode(const store::Store& store, std::vector<Item>& items,
                   const std::vector<store::BytecodeKey>& keys, bool hash, unsigned jobs,
                   Progress& progress);

/// `--ignore-bytecode`: every list the store holds that came from an artifact
/// (`WheelBytecode::received`) is compiled again, its objects stored anew, and replaces it.
void distrust_received_bytecode(std::vector<Item>& items);

/// Received bytecode (pull, unpack): each (item, key) `plan_bytecode` marked to compile whose
/// layer `layers` holds ("<wheel sha256>/<key name>" → the layer's file, named
/// `<its sha256>.pyc-layer`) is taken from it instead.
void take_received_bytecode(std::vector<Item>& items,
                            const std::map<std::string, std::filesystem::path>& layers);

/// The adoption of `item`'s received layer `k` (`store::ReceivedLayer`; a bad layer is an
/// integrity error naming it), as tasks of the fetch's pool beside the other wheels' ingest. It
/// begins once the layer's file is there (`arrived`): one task reads its list, then its parts
/// (of a few MiB each) and the hash of the whole file run on every core; and it ends once the
/// wheel is stored as well (`wheel_stored`): the list's sources are checked against it. The
/// last of these tasks sets the list on the item and removes the layer's file (so publish's
/// syncfs never writes it). So torch's layer is stored while torch's
/// wheel is still being ingested, never after it. Each call is made once, from any thread; the
/// object outlives the pool's run.
class LayerAdoption {
  public:
    /// `clock`: the fetch's, for `ItemBytecode::adopted_at`.
    LayerAdoption(const store::Store& store, Item& item, std::size_t k, const Stopwatch& clock);
    LayerAdoption(const LayerAdoption&) = delete;
    LayerAdoption& operator=(const LayerAdoption&) = delete;
    ~LayerAdoption();
    void arrived(TaskPool& pool);
    void wheel_stored(TaskPool& pool);

  private:
    void add_sources_task(TaskPool& pool);  // under mutex_, once both are there
    void done();
    const store::Store& store_;
    Item& item_;
    std::size_t k_;
    const Stopwatch& clock_;
    std::mutex mutex_;
    std::unique_ptr<store::ReceivedLayer> layer_;  // once its list is read
    bool wheel_ = false;                           // item_.wheel is set
    std::atomic<std::size_t> left_{0};             // its tasks still to finish
};

/// Once the pool has run: every adopted list added to `lists` (to publish) and counted in
/// `report`.
void count_received_bytecode(std::vector<Item>& items, BytecodeReport& report,
                             std::vector<const store::WheelBytecode*>& lists);

/// How many (item, key) bytecode lists `plan_bytecode` marked to compile.
std::size_t bytecode_lists_to_compile(const std::vector<Item>& items);

/// The compile work of one create, as tasks of the fetch's own pool (in its lane kCompileLane,
/// beside the ingest's), on a pool of the interpreter's workers, in batches, the largest first.
/// A fetched wheel's modules compile as soon as the ingest task that stored their sources ends,
/// before the wheel is checked against its RECORD: their `.pyc` bytes are held (up to
/// kMaxHeldBytes in all, past which the rest wait for the wheel) and enter the store only once
/// the wheel is stored, so a wheel that fails its check leaves nothing behind. Every `.pyc` is
/// stored as an object as soon as its wheel is. Thread-safe: `add` and `add_ingested` may run
/// in any task.
class BytecodeTasks {
  public:
    /// The pool's lanes: ingest tasks wait on writes the kernel throttles, compile tasks keep
    /// a CPU busy; each lane has `jobs` threads, so waiting writes never idle the compiler.
    static constexpr unsigned kIngestLane = 0, kCompileLane = 1, kLanes = 2;
    /// Compiled `.pyc` bytes held for wheels not yet stored, at most.
    static constexpr std::uint64_t kMaxHeldBytes = 512u << 20;
    /// Each (item, key) compiled advances `progress` by one. `replaced`: the objects a repair
    /// in this create stores again; a module whose stored source is one of them never compiles
    /// early (the store's copy is the damaged one until that repair's wheel is stored).
    BytecodeTasks(const store::Store& store, const env::Interpreter& in, unsigned jobs,
                  Progress& progress, std::set<std::string> replaced = {});
    ~BytecodeTasks();
    /// Before the ingest tasks of `item` (whose wheel has `members` regular files) run: its
    /// modules may then compile from `add_ingested`.
    void expect(Item& item, std::size_t members);
    /// The priority of an ingest task of `cost` that stores `files`. Two stages over two
    /// lanes, as Johnson's rule orders them: a task holding modules (cheap to store, costly to
    /// compile) before any other, the most source first, so the compile lane is fed at once;
    /// the rest by `cost`, the biggest first, and only the disk waits on those.
    static std::uint64_t ingest_priority(std::uint64_t cost,
                                         std::span<const store::WheelFile> files);
    /// After one ingest task of an expected `item`: compile tasks for the modules among
    /// `members` (`store::Ingest::ingested_members`).
    void add_ingested(Item& item, std::vector<store::IngestedMember> members, TaskPool& pool);
    /// Once `item`'s wheel is stored: the tasks that store every key's `.pyc` files, compiling
    /// what was not compiled yet.
    void add(Item& item, TaskPool& pool);
    /// Once the pool has run: each compiled list set on its item, its files in file-list
    /// order. Returns the lists to publish and what compiling them took.
    CompiledLists finish();

  private:
    struct Slot;
    struct State;
    struct Early;
    std::vector<State*> states_of(Item& item, std::size_t members);
    void run_early(State& st, const std::vector<Early>& batch);
    void run(State& st, const std::vector<std::size_t>& batch, bool wait, TaskPool& pool);
    const Stopwatch clock_;  // for each item's compiled_at
    const store::Store& store_;
    env::BytecodeCompiler compiler_;
    Progress& progress_;
    const std::set<std::string> replaced_;
    std::atomic<std::uint64_t> held_{0};
    std::atomic<std::int64_t> waited_ns_{0};  // in `run`, on slots early tasks were compiling
    std::mutex mutex_;                        // states_, by_item_, and each item's compiled_at
    std::vector<std::unique_ptr<State>> states_;
    std::map<const Item*, std::vector<State*>> by_item_;
};

}  // namespace envbox::install
