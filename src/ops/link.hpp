#pragma once
// The link check as create, verify and doctor run it (env/link_check.hpp): the environment's
// wheels from the store, their ELF facts read once per wheel, the lock's dependencies, the
// interpreter and the CUDA line; and the refusal create makes of what it finds.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envbox/env/generation.hpp"
#include "envbox/env/interpreter.hpp"
#include "envbox/env/link_check.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/store/store.hpp"

namespace envbox::ops {

/// One package of the environment: its name and version (as locked), the store's file list
/// of its wheel, and its ELF facts when the fetch read them (`install::Item::elf`; nullptr:
/// kept in the store, or read now).
struct LinkPackage {
    std::string name, version;
    const store::WheelFiles* wheel = nullptr;
    const std::vector<store::ElfFile>* facts = nullptr;
};

using env::LinkReport;

/// What the check takes from the lock: each package's dependencies (`pylock`; nullptr, or a
/// lock that records none: every wheel counts as a dependency of every other), and the CUDA
/// line its manifest declared (`[tool.envbox] cuda`, "13.0"), the environment's line where no
/// package says one.
struct LinkLock {
    const lock::Pylock* pylock = nullptr;
    std::string cuda;
};

/// Links the environment of `packages` on paper.
/// `cached`: a result kept in the home for the same wheels, dependencies, interpreter, CUDA line
/// and host folders is used while none of the host's files it read changed, and a new result is
/// kept (create); verify and doctor link afresh.
LinkReport check_links(const store::Store& store, const std::vector<LinkPackage>& packages,
                       const env::Interpreter& interpreter, const LinkLock& lock, unsigned jobs,
                       bool cached);

/// `cache/link/<digest of key_text>` in `home` (link_cache.cpp).
std::filesystem::path link_cache_file(const std::filesystem::path& home,
                                      const std::string& key_text);
/// The kept result at `file`, when it reads and every host file it lists is unchanged.
std::optional<LinkReport> read_link_cache(const std::filesystem::path& home,
                                          const std::filesystem::path& file);
/// Keeps `report` at `file` (never through a link planted in the home).
void write_link_cache(const std::filesystem::path& home, const std::filesystem::path& file,
                      const LinkReport& report);

/// The same check of generation `g`, whose packages' file lists are `wheels` (in its order), with
/// the dependencies its own copy of the lock records.
LinkReport check_generation_links(const store::Store& store, const env::Generation& g,
                                  const std::vector<store::WheelFiles>& wheels,
                                  const env::Interpreter& interpreter, unsigned jobs);

/// Sets `allowed` on each finding of `report` that refuses (`LinkFinding::refuses`) for a
/// package in `[install].allow-unlinked` (a CUDA-line one also when the lock was made with
/// --allow-mixed-cuda).
void mark_allowed(LinkReport& report, const lock::Manifest* manifest, bool allow_mixed_cuda);

/// Refuses the findings of `report` that refuse and are not allowed (`mark_allowed`, applied
/// here): a CUDA library of another line exits 3, as the name-based conflicts do, a symbol
/// missing from the environment's library exits 8. Returns the findings to show as notes.
std::vector<env::LinkFinding> refuse_unlinked(LinkReport& report, const std::string& env,
                                              const lock::Manifest* manifest, bool allow_mixed_cuda,
                                              const std::filesystem::path& lock_path);

}  // namespace envbox::ops
