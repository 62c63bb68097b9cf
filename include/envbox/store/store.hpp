#pragma once
/// The content-addressed store (docs/ARCHITECTURE.md, "The store"): every file of every wheel
/// kept once as a read-only object named by its sha256, plus one published file list per wheel.
///
/// Layout under the home directory (`Home`, home.hpp):
///   store-v1/objects/sha256/ab/cdef…     object (0444), or cdef….x (0555) for executables
///   store-v1/wheels/<wheel sha256>/files  the wheel's file list (published last)
///   store-v1/wheels/<wheel sha256>/bytecode/<key>  its compiled modules (bytecode.hpp)
///   tmp/                                  staging, same filesystem, cleaned on failure
///
/// The store owns its lifecycle; each step has its file in src/store/:
///   ingest        `Ingest` (ingest.cpp, ingest_member.cpp, ingest_finish.cpp)
///   publish       `Store::publish` (store.cpp)
///   bytecode      `Store::put_object`, `Store::load_bytecode` (bytecode.cpp)
///   check         `object_touched`, `Store::damaged_objects` (check.cpp)
///   sweep (gc)    `Store::sweep` (sweep.cpp)

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "envbox/pep/filename.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/elf.hpp"
#include "envbox/util/unique_fd.hpp"

namespace envbox::store {

/// Every object's mtime: 1980-01-01, the earliest a zip can record.
constexpr time_t kObjectMtime = 315532800;

/// The mode of an untouched object: 0444, or 0555 for an executable member.
constexpr mode_t object_mode(bool executable) {
    return executable ? 0555 : 0444;
}

/// What says that a store object was touched since it was ingested, or nullopt when `st` (its
/// stat) looks as ingest left it: a regular file of `size` bytes, mode `object_mode`, mtime
/// `kObjectMtime`. A write through a hard link (root, or a run without the sandbox) changes the
/// mtime and usually the size; a chmod changes the mode. Same-size writes that also put the
/// mtime back are found only by hashing (`verify --deep`, `create --force`).
std::optional<std::string> object_touched(const struct stat& st, std::uint64_t size,
                                          bool executable);

/// One regular file of a wheel.
struct WheelFile {
    std::string path;    ///< archive path, normalised, UTF-8
    std::string digest;  ///< sha256, lowercase hex (also the object's name)
    std::uint64_t size = 0;
    bool executable = false;
};

/// What the store knows about an ingested wheel.
struct WheelFiles {
    std::string wheel_sha256;
    std::string filename;   ///< the wheel's file name
    std::string name;       ///< `Name` from METADATA, as written
    std::string version;    ///< `Version` from METADATA
    std::string dist_info;  ///< "name-1.0.dist-info"
    bool root_is_purelib = false;
    std::vector<WheelFile> files;  ///< every member, in archive order (RECORD included)

    std::uint64_t total_size() const;
    const WheelFile* find(std::string_view path) const;
};

/// One native (ELF) file of a wheel and the facts `elf::read_facts` read from its object;
/// `unreadable` says why not, when it did not read (the facts are then empty).
struct ElfFile {
    std::string path;  ///< the wheel member's path
    elf::Facts facts;
    std::string unreadable;
};

/// Figures from one ingest.
struct IngestStats {
    std::uint64_t archive_bytes = 0;   ///< compressed size read
    std::uint64_t unpacked_bytes = 0;  ///< member bytes hashed
    std::uint64_t new_objects = 0;     ///< objects written (others already stored)
    std::uint64_t new_object_bytes = 0;
    /// Thread-seconds spent, summed over tasks: decoding members, hashing them (members and,
    /// when asked, the archive), writing objects (creating, writing, staging).
    double decode_s = 0, hash_s = 0, write_s = 0;

    IngestStats& operator+=(const IngestStats& o);
};

/// The content of `<name>-<version>.dist-info/<leaf>` in the wheel at `wheel` (METADATA when
/// an index offers no metadata file), or nullopt when the wheel has none. Errors name the
/// wheel `shown` (its file name and URL, where `wheel` is a temporary file), else its path.
std::optional<std::string> read_dist_info_file(const std::filesystem::path& wheel,
                                               std::string_view leaf, std::string_view shown = {});

/// How `Store::sweep` runs.
struct SweepOptions {
    bool dry_run = false;  ///< count what would go, remove nothing
    /// The bytecode lists to keep, as "<wheel sha256>/<key name>" (a kept wheel's other lists
    /// go, with the `.pyc` objects only they named).
    std::set<std::string> live_bytecode;
};

/// What `Store::sweep` removed (or, in a dry run, would remove).
struct SweepResult {
    std::size_t wheels_removed = 0;     ///< file lists of wheels no root names
    std::size_t bytecode_removed = 0;   ///< bytecode lists no root names
    std::size_t objects_removed = 0;    ///< objects no kept file list names (any name in a shard)
    std::size_t temporary_removed = 0;  ///< entries of tmp/
    std::size_t builds_removed = 0;     ///< build records whose wheel went (or never read)
    std::uint64_t bytes_freed = 0;      ///< the removed objects' sizes
};

/// What `Store::check` found: the wheels and objects it checked and each problem, one line each
/// ("wheel <sha256>: …", "object <path> (<member> of <wheel file>): …").
struct CheckResult {
    std::size_t wheels = 0;   ///< published file lists read
    std::size_t objects = 0;  ///< distinct objects they name, each checked once
    std::size_t hashed = 0;   ///< objects whose content was hashed
    std::vector<std::string> problems;
    bool clean() const { return problems.empty(); }
};

/// A wheel built from an sdist, as `store-v1/builds/<key>` records it: the key is the digest of
/// every input of the build (install/built.hpp makes it), `provenance` that key's text.
struct BuildRecord {
    std::string wheel_sha256;
    std::string filename;
    std::string provenance;
    /// This machine's envbox built it (`origin local`), rather than a pack or a pull carried it
    /// (`origin received`; a record of no origin, an older envbox's, counts as received).
    bool local = false;
    /// As read: the file belongs to this user and no one else may write it. A record that does
    /// not decide what a local create installs (`install::find_built_wheel`).
    bool owned = false;
};

class Store;
struct BytecodeKey;
struct WheelBytecode;

/// A member of a wheel being ingested whose bytes are whole on disk: at `staged` (a file of
/// the ingest's staging directory, which `Ingest::finish` renames to the store's object path),
/// or, when `staged` is empty, at the store's object already.
struct IngestedMember {
    std::size_t index = 0;  ///< in `WheelFiles::files` of the finished ingest
    WheelFile file;
    std::filesystem::path staged;
};

/// One wheel being ingested into the store. The constructor reads the archive's directory and
/// refuses unsafe members (absolute paths, `..`, symlinks and other non-regular members,
/// duplicates and names that collide after normalisation); the members' work is then split into
/// tasks — a big member alone, small ones in batches — which any threads may run in any order,
/// so one torch-sized wheel spreads over every core; `finish` checks every member against RECORD
/// (missing, unlisted, weak-hash, mismatched or wrong-size entries are errors, code
/// `integrity`) and, when asked, the archive's own sha256, and only then moves new objects into
/// place (never replacing an existing object). Nothing reaches the store before `finish`
/// succeeds; the staging directory goes with the object. Safe against concurrent ingests of the
/// same wheel. Does not publish the file list; see `Store::publish`.
class Ingest {
  public:
    /// `check_digest`: also hash the archive (as one more task) and require `wheel_sha256`;
    /// false when the caller verified the bytes already (a download hashed while it streamed).
    /// `wheel_sha256` must be 64 lowercase hex digits (else `invalid_input`, before any path is
    /// built from it); `archive` must be a regular file (never a device or a FIFO) of
    /// `expected_size` bytes when given (the lock's `size`, checked for local paths too), else
    /// `integrity`. WHEEL, METADATA and RECORD are read into memory only up to 1, 16 and 64 MiB;
    /// METADATA's Name must be a valid name of the file name's project and its Version (and the
    /// .dist-info directory's) a PEP 440 version equal to the file name's (`integrity`).
    Ingest(const Store& store, const std::filesystem::path& archive,
           const std::string& wheel_sha256, const std::string& filename, bool check_digest,
           std::optional<std::uint64_t> expected_size = std::nullopt);
    ~Ingest();
    Ingest(const Ingest&) = delete;
    Ingest& operator=(const Ingest&) = delete;

    std::size_t task_count() const;
    /// Rough work of task `t` in bytes, for running the biggest first.
    std::uint64_t task_cost(std::size_t t) const;
    /// The members task `t` stores, in archive order (their digests are set once it has run;
    /// their paths and sizes are read only).
    std::span<const WheelFile> task_files(std::size_t t) const;
    /// Objects (by digest) to store again even where one exists and looks untouched: a repair
    /// of objects whose content was found wrong. Call before any task runs.
    void replace_objects(std::set<std::string> digests);
    /// Runs task `t`; thread-safe across distinct tasks.
    void run_task(std::size_t t);
    /// The wheel's regular files (the size of `WheelFiles::files` once finished).
    std::size_t file_count() const;
    /// Once task `t` has run, in the thread that ran it: its members, each where its bytes are
    /// whole now, before the wheel is checked against its RECORD (so nothing read from them may
    /// enter the store before `finish`). A member whose object another task of this ingest is
    /// still writing is left out.
    std::vector<IngestedMember> ingested_members(std::size_t t) const;
    /// Once every task has run: verifies and moves the objects in.
    WheelFiles finish(IngestStats* stats = nullptr);

  private:
    struct Impl;
    static void check_identity(const Impl& im, const WheelFiles& w);
    std::unique_ptr<Impl> impl_;
};

class Store {
  public:
    /// Opens (creating when needed) the store under `home`.
    explicit Store(std::filesystem::path home);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    const std::filesystem::path& home() const { return layout_.root(); }
    /// The home's folders (home.hpp).
    const Home& layout() const { return layout_; }
    std::filesystem::path root() const { return layout_.store(); }
    std::filesystem::path tmp_dir() const { return layout_.tmp(); }
    /// Where an object lives. `digest` must be 64 lowercase hex digits: anything else throws
    /// (`invalid_input`) and no path is built, whoever passes it.
    std::filesystem::path object_path(std::string_view digest, bool executable) const;
    /// The object's path relative to `objects_dir_fd()` ("ab/cdef…", "ab/cdef….x"); same check.
    std::string object_relpath(std::string_view digest, bool executable) const;
    /// An open descriptor of `store-v1/objects/sha256`, for *at() calls.
    int objects_dir_fd() const { return objects_fd_.get(); }

    /// The published file list of a wheel, if it was ingested before. `wheel_sha256` must be 64
    /// lowercase hex digits (else `invalid_input`); a list whose digests, name or format are
    /// not what an ingest writes is reported damaged (`integrity`), never half-read.
    std::optional<WheelFiles> load_wheel(std::string_view wheel_sha256) const;

    /// The ELF facts of `w`'s native files: members named `*.so`, `*.so.*` or executable whose
    /// bytes start with the ELF magic, kept as `wheels/<sha256>/elf` once read (elf_facts.cpp):
    /// content-addressed, computed once per wheel. In steps, for a caller that reads the members
    /// of many wheels on every core (ops/link.cpp): the facts kept for `w` (nullopt when none, or
    /// they do not read as this reader writes them); the members that may be ELF files; one
    /// member's facts (nullopt: not an ELF file; a store object of another size than its file
    /// list says is `integrity`); and keeping them (a read-only store keeps nothing).
    std::optional<std::vector<ElfFile>> kept_elf_facts(const WheelFiles& w) const;
    static std::vector<const WheelFile*> elf_candidates(const WheelFiles& w);
    std::optional<ElfFile> read_elf_member(const WheelFile& f) const;
    void keep_elf_facts(const WheelFiles& w, const std::vector<ElfFile>& facts) const;

    /// `w`'s objects that are missing or touched (`object_touched`), with, for the first, what
    /// is wrong; with `hash`, each object's content is also hashed and compared with its name.
    /// A wheel with such objects is ingested again (`Ingest::replace_objects`) before anything
    /// links it.
    struct Damage {
        std::set<std::string> digests;
        std::string first;  ///< "OBJECT (member path): what is wrong"
    };
    std::optional<Damage> damaged_objects(const WheelFiles& w, bool hash) const;
    /// The same for the `.pyc` objects of a bytecode list.
    std::optional<Damage> damaged_objects(const WheelBytecode& b, bool hash) const;

    /// `wheels/<sha256>/archive`: the wheel's own archive, kept once verified so that `push`
    /// and `pack` read it from the store (archive.cpp). Same digest check as `load_wheel`.
    std::filesystem::path archive_path(std::string_view wheel_sha256) const;
    /// The kept archive, when there is one (of `size` bytes, when given; nullopt otherwise).
    /// A link at the archive or a folder above it inside the home is refused
    /// (`refuse_planted_link`), never followed; the bytes are the caller's to hash.
    std::optional<std::filesystem::path> kept_archive(
        std::string_view wheel_sha256, std::optional<std::uint64_t> size = std::nullopt) const;
    /// Moves `verified` (the wheel's bytes, its sha256 already checked by the caller, on the
    /// home's filesystem) to `archive_path`, read-only, unless an archive is there already
    /// (then `verified` is removed). Only for a wheel whose file list is published: `sweep`
    /// removes the archive with its file list.
    void keep_archive(std::string_view wheel_sha256, const std::filesystem::path& verified) const;

    /// The build record named `key` (64 lowercase hex digits, else invalid_input), read never
    /// through a link, its owner and mode from the same descriptor; nullopt when there is none.
    /// One that does not read as `record_build` writes it is damaged (`integrity`).
    std::optional<BuildRecord> load_build(std::string_view key) const;
    /// Writes the build record `key` atomically and durably, read-only. The wheel's file list
    /// must be published first (a record names a wheel the store holds; `sweep` removes a
    /// record with its wheel).
    void record_build(std::string_view key, const BuildRecord& record) const;

    /// The bytecode list of a wheel for `key` (bytecode.hpp), if it was compiled before. Same
    /// checks as `load_wheel`: a list that does not read as written is damaged (`integrity`).
    std::optional<WheelBytecode> load_bytecode(std::string_view wheel_sha256,
                                               const BytecodeKey& key) const;

    /// Stores `content` (a compiled module) as an object, read-only with the fixed mtime, and
    /// returns its digest and size. An untouched object of that digest is kept unless
    /// `replace`; a touched one is always replaced. Durable only once published.
    WheelFile put_object(std::string_view content, bool replace = false) const;
    /// `put_object` of `content` whose sha256 the caller has just computed and compared:
    /// `digest`, lowercase hex (a received `.pyc`, checked against its list).
    WheelFile put_hashed_object(std::string_view content, std::string digest,
                                bool replace = false) const;

    /// Makes ingested objects durable (one syncfs) and then publishes the file lists, then the
    /// bytecode lists (a list is published only once its wheel's file list is).
    void publish(const std::vector<const WheelFiles*>& wheels,
                 const std::vector<const WheelBytecode*>& bytecode = {}) const;

    /// The store's garbage collection, as Nix's `collectGarbage`: removes every wheel's file
    /// list whose sha256 is not in `live_wheels`, every object (any entry of an objects shard)
    /// that no kept file list names, and every entry of tmp/. The caller computes the roots
    /// and holds the store lock exclusively (`ops::store_lock_path`), so no ingest is between
    /// staging and publishing and no create between publishing and linking. A dry run removes
    /// nothing and reports exactly what a real one would. A kept wheel's damaged file list
    /// throws (`integrity`, from `load_wheel`) before any object is removed (dead wheels' lists
    /// met before it may be gone); a file list or tmp/ entry that cannot be removed throws
    /// (`generic`); an object that cannot be unlinked is counted and left.
    SweepResult sweep(const std::set<std::string>& live_wheels,
                      const SweepOptions& options = {}) const;

    /// The store's own check, as Nix's `verifyStore`: every published file list reads as an
    /// ingest writes it (format, digests, name), and every object a list names exists and is
    /// untouched (`object_touched`); with `hash`, its content is hashed and compared with its
    /// name, on `jobs` threads. Objects no list names are not damage (`sweep` removes them).
    /// The caller holds the store lock shared, so no sweep runs meanwhile. Repair: `create
    /// --force` of an environment built from a damaged wheel.
    CheckResult check(bool hash, unsigned jobs) const;

  private:
    // sweep: the objects of wheel `sha`'s live bytecode lists, the others removed.
    void keep_bytecode(const std::string& sha, const SweepOptions& options,
                       std::unordered_set<std::string>& live_objects, SweepResult& result) const;

    Home layout_;
    UniqueFd objects_fd_;
};

}  // namespace envbox::store
