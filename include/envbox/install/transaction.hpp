#pragma once
/// One install transaction: a lock's packages for one target, from one wheel source, made into
/// a generation. The source is either the lock's own (its files by path or URL, with the
/// manifest's indexes' CA and credentials; sdists, folders and git commits built here) or a
/// received artifact (pull, unpack), and then nothing else. `create`, `pull`/`unpack` (through
/// create) and `run`'s sync each make one; the steps between (the no-op check, the CUDA and link
/// checks, the locks) stay theirs:
///
///   Transaction(lock, target, options)  one item per package for the target; a local item's
///                                       tree and digest (or the received wheel's)
///   fetch(store)                        build what is built from source, fetch and ingest what
///                                       the store lacks, compile bytecode, publish
///   execute(store, gen, edir, …)        link the generation, stamp it, switch `current`

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "envbox/env/build.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/install/fetch.hpp"
#include "envbox/install/item.hpp"
#include "envbox/install/source_build.hpp"
#include "envbox/install/target.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"

namespace envbox::install {

/// Where a transaction's wheels come from, and how it fetches and builds them.
struct TransactionOptions {
    BuildSite site;  ///< the home, progress, cores, git
    index::HttpOptions http;
    std::vector<resolve::IndexConfig> indexes;  ///< the manifest's, for CA and credentials
    bool offline = false;
    /// The project's `manifests/` folder: a local tree's digest and build leave it out (its
    /// locks change with every `lock`).
    std::filesystem::path manifests;
    /// What an artifact carried: then the only source (install::Received). Outlives the
    /// transaction.
    const Received* received = nullptr;
    std::vector<store::BytecodeKey> bytecode;  ///< `bytecode_keys`; empty: none
    bool verify_by_content = false;            ///< --force: check stored objects by content
    bool elf_facts = false;                    ///< keep each wheel's ELF facts (FetchPlan)
};

/// A wheel built for shipping (`Transaction::build_editables`).
struct ShippedWheel {
    std::string filename, sha256;
};

class Transaction {
  public:
    /// Selects one item per package of `lock` for `target` (install::select_items; an sdist the
    /// lock names a build environment for is an item to build) and gives each local item its
    /// tree and digest (`prepare_local_items`). `lock` and `target` outlive the transaction.
    Transaction(const lock::LockFile& lock, const Target& target, TransactionOptions options);

    const std::vector<Item>& items() const { return items_; }
    /// The keys its modules are compiled for (`TransactionOptions::bytecode`).
    const std::vector<store::BytecodeKey>& bytecode() const { return options_.bytecode; }

    /// What a generation built by this transaction depends on besides the lock's bytes: a
    /// "--local NAME DIGEST" line for each folder or git commit, so an edited tree builds a new
    /// generation.
    std::string local_inputs() const;

    /// Builds each sdist, folder and git commit (or adopts the wheel an artifact carried for
    /// it), then fetches and ingests what the store lacks and compiles the bytecode
    /// (install::fetch_into_store); each item's `wheel` is set after. The caller holds the store
    /// lock shared.
    FetchReport fetch(store::Store& store);

    /// Builds `gen` (install::next_generation) in `edir` from the fetched items, requested as
    /// `manifest` requires them, stamps it and switches `current` to it (env::build_generation).
    env::BuildReport execute(store::Store& store, env::Generation& gen,
                             const std::filesystem::path& edir, const lock::Manifest* manifest,
                             const env::BuildOptions& build);

    /// For push and pack, which ship a reviewed commit's code and never an editable link: each
    /// editable item built as a regular wheel of its tree as it is now (as a path dependency is
    /// built, keyed by install::tree_digest; the store's when built before), by package name.
    /// Nothing else is built or fetched.
    std::map<std::string, ShippedWheel> build_editables(store::Store& store);

  private:
    const lock::LockFile& lock_;
    const Target& target_;
    TransactionOptions options_;
    FetchPlan plan_;
    std::vector<Item> items_;
};

}  // namespace envbox::install
