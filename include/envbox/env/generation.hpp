#pragma once
/// Generations of an environment (docs/ARCHITECTURE.md, "Environments and generations"):
/// `gen-N/` trees, each with `.envbox/` holding the lock it was built from, a description and a
/// completion stamp, and a `current` symlink switched with one rename.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envbox/util/unique_fd.hpp"

namespace envbox::env {

struct GenerationPackage {
    std::string name, version, wheel_sha256, filename;
    bool requested = false;  ///< REQUESTED was written (a root of the environment)
    std::string direct_url;  ///< direct_url.json content, when installed from a direct URL
    bool preferred = false;  ///< in `[install].prefer`: its files won overlaps (see plan_install)
};

struct Generation {
    int number = 0;
    std::filesystem::path path;
    bool complete = false;       ///< stamped; only complete generations may become current
    std::string created;         ///< UTC, ISO 8601
    std::string lock_digest;     ///< sha256 of the lock bytes plus the target
    std::string lock_source;     ///< where the lock was read from
    std::string python;          ///< base interpreter path
    std::string python_version;  ///< "3.11.2"
    std::string platform;        ///< target platform tag
    std::string environment;     ///< the environment's name (its venv prompt)
    std::string link_mode;       ///< how files were placed: hardlink, reflink or copy
    /// envbox wrote its pip into this generation (record key `pip-shim`). Generations built
    /// before envbox had one lack it, and `verify` expects none there.
    bool pip_shim = false;
    /// The bytecode keys its `.pyc` files were compiled for (store::BytecodeKey::name, one per
    /// optimisation level); empty: built without bytecode (`--no-compile`).
    std::vector<std::string> bytecode;
    std::vector<GenerationPackage> packages;
    /// Non-empty when `.envbox/info` exists but cannot be read as written (an unknown header,
    /// a malformed line: a record an older envbox let a hostile value break): what is wrong.
    /// `packages` may then lack what the generation uses, so nothing may be deleted on its word.
    std::string damaged;
};

/// `gen-N` directory name.
std::string generation_dir_name(int number);

/// Every `gen-N` under `env_dir` (complete or not), by number.
std::vector<Generation> list_generations(const std::filesystem::path& env_dir);

/// The generation `current` points at, when it is a complete one.
std::optional<Generation> current_generation(const std::filesystem::path& env_dir);

/// Reads `gen/.envbox/info` (and the stamp); nullopt when absent or unreadable.
std::optional<Generation> read_generation(const std::filesystem::path& gen_path);

/// The lock the generation at `gen_path` was built from (`.envbox/pylock.toml`), read without
/// following a link (a link planted at the folder or the file is refused, exit 5; a FIFO or a
/// device too, without blocking), at most 16 MiB as every lock; nullopt when there is none.
std::optional<std::string> read_generation_lock(const std::filesystem::path& gen_path);

/// Writes `.envbox/info` and `.envbox/pylock.toml` (the lock text) into `gen.path`. The record
/// (format 2) percent-encodes every value, so no value — a Version with a blank, a folded
/// header's line break — can shift a field or add a line; format 1 records are still read.
/// Throws (`integrity`) for a package without a sha256 wheel digest, name, version or file name.
void write_generation_record(const Generation& gen, const std::string& lock_text);

/// Makes a built generation's directories read-only (mode 0555, as Nix's store): `dirs` (those
/// the installation made, relative to `gen_path`), their parents, the root and `bin/`, so that
/// a `pip install --prefix` or an IDE writing through `.envbox/ENV/bin/python` outside `run`
/// fails for a user who is not root. `.envbox/` stays writable: envbox's own record, stamp and
/// in-use lock. Files keep their modes (store objects are read-only already). gc, `delete` and
/// `create --force` remove such trees as before (util/own_tree makes a folder writable before
/// emptying it). `jobs` threads; about one fchmodat per directory.
void seal_generation(const std::filesystem::path& gen_path, const std::vector<std::string>& dirs,
                     unsigned jobs);

/// Makes the generation durable (syncfs) and writes its completion stamp (fsynced).
void stamp_complete(const std::filesystem::path& gen_path);

/// Points `env_dir/current` at `gen-N` with one atomic rename (then fsyncs the directory).
void switch_current(const std::filesystem::path& env_dir, int number);

// ---- generations in use ------------------------------------------------------------------
// A generation a process uses must outlive it. Two kinds of holders are recognised:
// `envbox run` jobs hold `gen-N/.envbox/in-use` shared (flock) through a descriptor inherited
// across exec by the command and every child that keeps it; processes started otherwise (an
// activated venv, an IDE) are found in /proc, as Nix's gc finds runtime roots.

/// `gen/.envbox/in-use`: the empty file whose flock marks a generation as used by a job.
std::filesystem::path in_use_lock_path(const std::filesystem::path& gen_path);

/// ENV's current generation, held shared for the rest of this process and whatever it execs:
/// the lock's descriptor is opened without O_CLOEXEC and never closed by envbox. The stamp is
/// read again once the lock is held, so a generation that a gc removed meanwhile is noticed and
/// the (new) current one held instead. nullopt when there is no complete current generation.
/// When the lock file cannot be opened (a read-only shared store whose generation predates
/// the lock file), the generation is returned unheld: the /proc scan still finds the job.
std::optional<Generation> hold_current_generation(const std::filesystem::path& env_dir);

/// `gen` (a complete generation just read) held the same way; nullopt when a gc removed it
/// meanwhile (its stamp is gone once the lock is held).
std::optional<Generation> hold_generation(const Generation& gen);

/// An exclusive hold on a generation's in-use lock, taken by gc before it removes one.
class GenerationClaim {
  public:
    /// Tries once, without waiting: `claimed()` is false while any process holds the generation.
    explicit GenerationClaim(const std::filesystem::path& gen_path);
    GenerationClaim(const GenerationClaim&) = delete;
    GenerationClaim& operator=(const GenerationClaim&) = delete;
    ~GenerationClaim();
    bool claimed() const { return claimed_; }

  private:
    UniqueFd fd_;
    bool claimed_ = false;
};

/// Removes a claimed generation: its completion stamp first, so that a half-removed tree (a
/// crash, a full disk) is never taken for a good generation and a job about to hold it sees
/// it gone, then the tree. Throws `Error` naming the path on failure.
void remove_generation(const std::filesystem::path& gen_path);

/// Running processes that use files under some of `generation_dirs`, found the way Nix's gc
/// finds runtime roots: /proc/PID/exe, cwd, root, every fd/*, the files in maps, and paths
/// (colon-separated values too: PATH, VIRTUAL_ENV) in environ. A path is under a generation
/// when it is the generation's directory or starts with it and '/' (gen-1 never claims gen-10);
/// the kernel reports resolved paths, so `current` and project links need no special case.
/// Entries that cannot be read (other users' processes, processes that exited) are skipped.
class RuntimeRoots {
  public:
    /// Scans /proc once for paths under `generation_dirs` (made canonical here).
    explicit RuntimeRoots(const std::vector<std::filesystem::path>& generation_dirs,
                          const std::filesystem::path& proc = "/proc");
    /// "pid 123 (python3), whose working directory is PATH" (or "which has PATH open", "which
    /// maps PATH", …) for a process using `gen_path`, if any.
    std::optional<std::string> user_of(const std::filesystem::path& gen_path) const;

  private:
    std::vector<std::pair<std::string, std::string>> users_;  ///< canonical gen dir, who uses it
};

}  // namespace envbox::env
