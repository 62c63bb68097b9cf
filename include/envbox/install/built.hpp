#pragma once
/// Wheels built from sdists, kept in the store under a key made of every input of the build, as
/// Nix keys a derivation's output: the sdist's sha256, the build environment (its lock's
/// digest), the interpreter (implementation and full version), the building machine, the
/// backend and its config settings, the variables that change the output, the runtime wheels a
/// build sees (torch by sha256) and the toolchain (compiler and nvcc versions). A change to any
/// of these builds again; nothing else does. A built wheel is an ordinary store wheel (its
/// objects, file list and kept archive, so push and pack carry it); its record,
/// `store-v1/builds/<key digest>`, names it and keeps the key's text as its provenance.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/store/store.hpp"

namespace envbox::install {

/// Every input of one build; `digest()` names its record.
struct BuildKey {
    std::string sdist_sha256;
    std::string build_env;  ///< the build environment's lock digest
    std::string python;     ///< "cpython 3.11.2"
    std::string platform;   ///< the machine that builds: "linux x86_64 glibc 2.36"
    std::string backend;    ///< `build-backend`
    std::map<std::string, std::string> config_settings;
    std::map<std::string, std::string> variables;  ///< those that change the output
    std::vector<std::string> runtime;              ///< "torch 2.11.0+cu128 sha256", sorted
    std::vector<std::string> toolchain;            ///< "gcc 12.2.0", "nvcc 12.8.93", sorted

    /// The key as lines "field value" (values percent-encoded, fields in a fixed order): what
    /// the digest is taken of, and the record's provenance.
    std::string text() const;
    /// sha256 of `text()`, lowercase hex.
    std::string digest() const;
};

/// A built wheel the store holds.
struct BuiltRecord {
    std::string wheel_sha256;
    std::string filename;
    std::string key_text;  ///< `BuildKey::text()` of the build that made it
};

/// The wheel built for `key` before, when its record reads as written (never through a link;
/// a damaged record is `integrity`) and the store still holds the wheel's file list; nullopt
/// otherwise (never built, or the wheel was collected since).
std::optional<BuiltRecord> find_built_wheel(const store::Store& store, const BuildKey& key);

/// Whether `text` reads as a `BuildKey::text()` of a build of the sdist `sdist_sha256`: at most
/// 64 KiB, the key's header line, then lines of its fields (and of `source`: where a local
/// package's tree came from, which push and pack add as provenance) (values percent-encoded: no
/// blank or control character) with one `sdist` line naming that sdist. A key that came with an
/// artifact (pull, unpack) is checked so before it is kept as the provenance of a record.
bool is_build_key_text(std::string_view text, std::string_view sdist_sha256);

/// The `sdist` field of a key's text (what it was built from); "" when it has none.
std::string built_from(std::string_view key_text);

/// Every build record of the store that reads (a damaged one is gc's to remove), by the sha256
/// of the wheel it names; the record's own digest is the sha256 of its `key_text`.
std::map<std::string, BuiltRecord> built_records(const store::Store& store);

/// The record, among `records` (`built_records`, read once by the caller), of the build that
/// made the wheel `wheel_sha256` from the sdist `sdist_sha256` (what push and pack send with the
/// wheel); nullopt when none (collected, or the wheel was not built here).
std::optional<BuiltRecord> built_record_of(const std::map<std::string, BuiltRecord>& records,
                                           std::string_view wheel_sha256,
                                           std::string_view sdist_sha256);

/// Keeps the record of a build that came with an artifact, under the digest of its key's text
/// (the key of the machine that built it: this one's toolchain may differ), once the wheel is
/// in the store; a record that is there already is left. `record.key_text` must have passed
/// `is_build_key_text`.
void record_received_build(const store::Store& store, const BuiltRecord& record);

/// Ingests the wheel at `wheel` (a build's output: checked as every wheel is, RECORD and
/// names), keeps its archive, publishes it, and then records it for `key` (atomically: a crash
/// leaves the old record or none). Returns the record.
BuiltRecord store_built_wheel(const store::Store& store, const BuildKey& key,
                              const std::filesystem::path& wheel);

}  // namespace envbox::install
