#pragma once
/// The steps of `ops::create`, in the order it runs them (private to ops). `create` itself
/// (create.cpp) is the list of these calls:
///
///   read_inputs          create.cpp             manifest, lock path, re-lock decision, lock
///   create_target        target.cpp             interpreter, platform, tags, markers
///   select_items         create.cpp             one wheel per package, for the target
///   check_cuda_coherence create.cpp             one CUDA line, the manifest's (unless allowed)
///   check_driver         create.cpp             the driver runs the CUDA line (or a note)
///   lock_environment     create.cpp             the environment's lock, the store's shared
///   generation_digest    create.cpp             what makes two generations the same (no-op)
///   bytecode_keys        create_bytecode.cpp    the keys modules are compiled for (or none)
///   fetch_into_store     create_fetch.cpp       fetch and ingest what the store lacks, compile
///                                               what has no bytecode (same pool), publish
///   build_generation     env/build.cpp          venv + links in gen-N, stamp, switch `current`
///   link_project_dir     create_generation.cpp  PROJECT/.envbox/ENV follows `current`

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "envbox/env/bytecode.hpp"
#include "envbox/env/cuda.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/index/fetch.hpp"
#include "envbox/index/http.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/ops/create.hpp"
#include "envbox/ops/target.hpp"
#include "envbox/resolve/index_source.hpp"
#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/parallel.hpp"

namespace envbox::ops::create_steps {

/// Seconds since the last `lap()` (or since construction).
class Stopwatch {
  public:
    double lap();
    /// Seconds since construction, without starting a new lap.
    double total() const;

  private:
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last_ = start_;
};

// ---- read inputs ---------------------------------------------------------------------------

/// What `create` reads before anything else.
struct Inputs {
    std::optional<lock::Manifest> manifest;  ///< manifests/ENV.toml when the project has it
    std::filesystem::path manifest_path;     ///< where it is (or would be); empty: no project
    std::filesystem::path lock_path;         ///< --lock FILE, else manifests/pylock.ENV.toml
    std::string lock_text;
    lock::Pylock pylock;    ///< parsed `lock_text`; the selection points into it
    bool relocked = false;  ///< the lock was (re)written first
};

/// Reads the manifest (when there is one), locks first when its own lock is missing or stale
/// (unless --frozen, or the lock was given with --lock, or envbox did not write it; --locked
/// makes that an error, exit 3), then reads and parses the lock and checks the manifest's
/// `[install].prefer` against it. Throws invalid_input without a project and without --lock,
/// and when the lock file is missing.
Inputs read_inputs(const Context& ctx, const CreateOptions& opt);

/// Why the project's own lock must be written again before `create` (empty: it need not): it is
/// missing, or envbox wrote it ([tool.envbox] has a manifest digest) and `lock_staleness` says
/// it no longer matches. A lock envbox did not write is used as it is.
std::vector<std::string> relock_reasons(const std::filesystem::path& manifest_path,
                                        const std::filesystem::path& lock_path);

// ---- select wheels ---------------------------------------------------------------------------

/// An item's bytecode for one key: loaded from the store, or to compile.
struct ItemBytecode {
    store::BytecodeKey key;
    std::optional<store::WheelBytecode> list;  ///< set once the store has it (or it compiled)
    bool compile = false;  ///< no list yet, or one with a damaged `.pyc`: compile
    bool replace = false;  ///< store every `.pyc` again (a damaged one was found by content)
};

/// What one selected package installs from.
struct Item {
    const lock::Package* package = nullptr;
    const lock::FileRef* file = nullptr;
    bool direct = false;  ///< installed from `archive` (PEP 610 direct URL)
    std::string sha256;
    std::string filename;
    std::optional<store::WheelFiles> wheel;  ///< set once the store has it
    store::IngestStats stats;
    bool fetched = false;
    bool repair = false;                 ///< in the store, but an object of it was touched
    std::set<std::string> replace;       ///< repair: the objects to store again
    std::vector<ItemBytecode> bytecode;  ///< one per key of `bytecode_keys`
    /// Seconds into the fetch when its wheel was stored and when its last module compiled
    /// (0: it was in the store / compiled nothing), for `create -vv`'s timeline.
    double stored_at = 0, compiled_at = 0;
};

/// One item per package PEP 751's selection picks for `target`: a wheel, or an `archive` that
/// is a wheel (installed as a direct URL). Throws invalid_input, naming the lock's line, for a
/// package that offers only an sdist, a directory, a VCS checkout or a non-wheel archive, and
/// for a file without a sha256; a selection error gets the lock and the target as context.
std::vector<Item> select_items(const lock::Pylock& pylock, const Target& target,
                               const std::filesystem::path& lock_path);

/// Refuses (invalid_input, naming each side and the lock) items whose CUDA-bearing packages
/// mix lines or disagree with the manifest's `cuda`, as `lock` does, unless the lock records
/// that it was written with --allow-mixed-cuda: a hand-edited lock, `--lock FILE` and
/// `--frozen` get the same check as a lock envbox wrote.
void check_cuda_coherence(const std::vector<Item>& items, const lock::Manifest* manifest,
                          const Inputs& in);

/// The CUDA lines the items' packages belong to (none for a CPU-only environment).
std::vector<env::CudaLine> items_cuda_lines(const std::vector<Item>& items);

// ---- locks and the no-op check -------------------------------------------------------------

/// Held while one create runs: the environment's own lock (one create per environment at a
/// time) and the store's, shared, so gc's sweep (exclusive) never deletes what this create has
/// ingested but not yet linked.
struct EnvLocks {
    std::optional<FileLock> env;
    FileLock store;
};

/// Creates `edir` and the home's locks/ folder and takes both locks, noting each wait; with
/// --no-wait an environment held by another envbox is an error instead.
EnvLocks lock_environment(const Context& ctx, const CreateOptions& opt,
                          const std::filesystem::path& edir);

/// The digest a generation records: the lock's bytes, the interpreter, its version, the
/// platform, the manifest's `[install].prefer` and the bytecode keys. The current generation with
/// this digest already is what create would build.
std::string generation_digest(const std::string& lock_text, const Target& target,
                              const lock::Manifest* manifest,
                              const std::vector<store::BytecodeKey>& bytecode = {});

// ---- bytecode (create_bytecode.cpp) ------------------------------------------------------------

/// The keys the environment's modules are compiled for: none with --no-compile or the
/// manifest's `[install].compile = false`; else the interpreter's, at level 0 and the level
/// the manifest's `[run].env` PYTHONOPTIMIZE asks for. An interpreter without a cache tag gets
/// none, with a note.
std::vector<store::BytecodeKey> bytecode_keys(const env::Interpreter& in,
                                              const lock::Manifest* manifest,
                                              const CreateOptions& opt, Progress& progress);

/// For each item the store holds, its bytecode lists for `keys`, and what must be compiled: a
/// missing list, or one with a missing or touched `.pyc` (with `hash`, one whose content is
/// wrong too). Items the store lacks are to be compiled for every key.
void plan_bytecode(const store::Store& store, std::vector<Item>& items,
                   const std::vector<store::BytecodeKey>& keys, bool hash, unsigned jobs,
                   Progress& progress);

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
    /// order; the counts into `result`. Returns the lists to publish.
    std::vector<const store::WheelBytecode*> finish(CreateResult& result);

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

// ---- fetch into the store (create_fetch.cpp) -------------------------------------------------

/// Loads each item's wheel from the store, and returns the items to fetch and ingest: those
/// the store lacks, and those with an object that was touched since ingest (checked by stat, or
/// with `hash` by content too), so nothing touched is ever linked into a new generation; their
/// ingest replaces the damaged objects. Every object is checked, on `jobs` threads.
std::vector<std::size_t> stored_or_missing(const store::Store& store, std::vector<Item>& items,
                                           bool hash, unsigned jobs, Progress& progress);

/// How to fetch the lock's file entry `file` (shown as `display`): its path or URL, `sha256`
/// and size, and, when `index` (its package's) is an index of the manifest (trailing slashes
/// aside), that index's CA and credentials. Create's fetch and push's refetch both ask it.
index::ArtifactRequest artifact_request(const std::string& display, const lock::FileRef& file,
                                        const std::string& sha256,
                                        const std::optional<std::string>& index,
                                        const std::vector<resolve::IndexConfig>& indexes);
/// The same for `item`.
index::ArtifactRequest artifact_request(const Item& item,
                                        const std::vector<resolve::IndexConfig>& indexes);

/// What the fetch needs besides the items.
struct FetchPlan {
    std::filesystem::path lock_dir;   ///< relative lock paths are found from here
    std::filesystem::path downloads;  ///< cache/downloads/<sha256>.whl, resumed when interrupted
    index::HttpOptions http;          ///< the page cache, offline, timeout, CA bundle
    std::vector<resolve::IndexConfig> indexes;  ///< the manifest's, for CA and credentials
    bool offline = false;
    /// `CreateOptions::received`: only these wheels, from `downloads`, fill what the store lacks.
    const std::set<std::string>* received = nullptr;
    bool verify_by_content = false;  ///< --force: check stored objects by content
    unsigned jobs = 1;
    const env::Interpreter* interpreter = nullptr;  ///< compiles the bytecode
    std::vector<store::BytecodeKey> bytecode;       ///< `bytecode_keys`; empty: none
};

/// Fetches and ingests every item the store lacks (or holds damaged), in one pool over all
/// wheels, then publishes them; every item's `wheel` is set after. Fills `result`'s fetched,
/// repaired, ingest, jobs and the ingest and publish times. With `received`, an item the store
/// lacks whose wheel the artifact did not carry (or did not leave in `downloads`) is an error
/// (integrity, exit 5, naming its package), and the others are read from `downloads` only;
/// otherwise with --offline, an item that would be downloaded is an error (network, exit 4);
/// both before anything is fetched. A download that
/// proves bad is removed; one never ingested stays for the next run.
void fetch_into_store(store::Store& store, std::vector<Item>& items, const FetchPlan& plan,
                      Progress& progress, Stopwatch& watch, CreateResult& result);

// ---- build the generation (create_generation.cpp) ------------------------------------------

/// The PEP 610 direct_url.json of an item installed from an `archive` (no credentials); a
/// relative `path` is made absolute from `lock_dir`, the lock's directory.
std::string direct_url_json(const Item& item, const std::filesystem::path& lock_dir = {});

/// The number of the next generation in `edir` (one past the highest); unstamped leftovers of
/// a crash are removed on the way.
int next_generation_number(const std::filesystem::path& edir);

/// The record of the generation to build next in `edir` (numbered by `next_generation_number`,
/// created now, for `target`, from the lock at `lock_path` whose generation digest is
/// `digest`); its packages are added by `install_requests`.
env::Generation next_generation(const std::filesystem::path& edir, const std::string& digest,
                                const std::filesystem::path& lock_path, const Target& target,
                                const CreateOptions& opt);

/// The install requests for `items`, in their order, and `gen`'s package records beside them:
/// requested when the manifest requires the package (or without a manifest, always), preferred
/// when its `[install].prefer` names it.
std::vector<env::InstallRequest> install_requests(const std::vector<Item>& items,
                                                  const lock::Manifest* manifest,
                                                  env::Generation& gen);

// ---- project view --------------------------------------------------------------------------

/// Points PROJECT/.envbox/ENV at the environment's `current` (and makes .envbox/ ignore itself
/// in git). Returns what went wrong, never throws.
std::optional<std::string> link_project_dir(const std::filesystem::path& project_root,
                                            const std::string& env,
                                            const std::filesystem::path& edir);

}  // namespace envbox::ops::create_steps
