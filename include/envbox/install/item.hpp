#pragma once
/// What an environment installs: one `Item` per package the lock selects for a target, with
/// the wheel it installs from and, as the install steps fill them in, its file list from the
/// store and its bytecode. `create`, `push`, `pack` and `pull` all start from these.

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envbox/env/cuda.hpp"
#include "envbox/install/target.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"

namespace envbox::install {

/// An item's bytecode for one key: loaded from the store, or to compile.
struct ItemBytecode {
    store::BytecodeKey key;
    std::optional<store::WheelBytecode> list;  ///< set once the store has it (or it compiled)
    bool compile = false;  ///< no list yet, or one with a damaged `.pyc`: compile
    bool replace = false;  ///< store every `.pyc` again (a damaged one was found by content)
    /// The layer a received artifact carried for this wheel and key (`take_received_bytecode`):
    /// adopted, not compiled (`LayerAdoption`).
    std::filesystem::path received;
    double adopted_at = 0;  ///< seconds into the fetch when it was adopted, for `-vv`
};

/// What one selected package installs from.
struct Item {
    const lock::Package* package = nullptr;
    const lock::FileRef* file = nullptr;
    bool direct = false;  ///< installed from `archive` (PEP 610 direct URL)
    /// Built from its sdist (`file`): `sha256` and `filename` are the sdist's until the build
    /// (or the store's earlier build) sets them to the built wheel's.
    bool sdist = false;
    /// Built from a local tree (PEP 751 `directory`, its `package->directory`) or a git commit
    /// (`vcs`, `package->vcs`, whose `sha256` is the digest of its URL, commit and subdirectory):
    /// `tree` and
    /// `sha256` (the tree's digest, install/local.hpp) are set by create before the build,
    /// which then sets `sha256` and `filename` to the built wheel's.
    bool local = false;
    bool editable = false;  ///< a local tree installed editable (PEP 660)
    std::filesystem::path tree;
    std::string sha256;
    std::string filename;
    std::optional<store::WheelFiles> wheel;  ///< set once the store has it
    store::IngestStats stats;
    bool fetched = false;
    bool repair = false;                 ///< in the store, but an object of it was touched
    std::set<std::string> replace;       ///< repair: the objects to store again
    std::vector<ItemBytecode> bytecode;  ///< one per key of `bytecode_keys`
    /// Its wheel's ELF facts, read in the fetch's pool once it was stored and kept in the store
    /// (`FetchPlan::elf_facts`); unset: the link check reads them from the store.
    std::optional<std::vector<store::ElfFile>> elf;
    /// Seconds into the fetch when its wheel was stored and when its last module compiled
    /// (0: it was in the store / compiled nothing), for the `-vv` timelines of create and pull.
    double stored_at = 0, compiled_at = 0;
};

/// One item per package PEP 751's selection picks for `target`: a wheel, or an `archive` that
/// is a wheel (installed as a direct URL). Throws invalid_input, naming the lock's line, for a
/// package that offers only an sdist, a directory, a VCS checkout or a non-wheel archive, and
/// for a file without a sha256; a selection error gets the lock and the target as context.
/// `buildable`: the packages the lock names a build environment for (`[tool.envbox] builds`),
/// whose sdist is then an item to build (`Item::sdist`) rather than refused.
std::vector<Item> select_items(const lock::Pylock& pylock, const Target& target,
                               const std::filesystem::path& lock_path,
                               const std::set<std::string>& buildable = {});

/// The CUDA lines the items' packages belong to (none for a CPU-only environment).
std::vector<env::CudaLine> items_cuda_lines(const std::vector<Item>& items);

}  // namespace envbox::install
