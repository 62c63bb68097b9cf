#pragma once
/// A wheel's bytecode for one key as one file that travels with an environment (`push`, `pack`;
/// docs/ARCHITECTURE.md, "Fleet"), so a receiving node links the builder's `.pyc` files instead
/// of compiling the stack again:
///
///   envbox-bytecode-layer 1
///   wheel <wheel sha256>
///   key <key name>                      cpython-312-cb0d0d0a-o0
///   list <bytes>
///   <the bytecode list, exactly as serialise_bytecode writes it>
///   <each .pyc's bytes, in the list's order, each of the list's size>
///
/// The same store list gives the same bytes, so a second push finds the blob present. A layer is
/// hostile where it enters: `ReceivedLayer` checks every `.pyc` against the list and the whole
/// file against its digest before the `.pyc` enters the store, and the list against the wheel
/// the node stored (by the lock's sha256) before anything names it. What no check can prove is
/// that a `.pyc` is the compiled form of its source: that is the builder's word
/// (docs/SECURITY.md).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/unique_fd.hpp"

namespace envbox::store {

/// A layer's whole size, at most: a torch wheel's `.pyc` files are ~100 MiB.
inline constexpr std::uint64_t kMaxBytecodeLayerBytes = 4ull << 30;

struct BytecodeLayer {
    std::string sha256;  ///< of the file's bytes
    std::uint64_t size = 0;
};

/// Writes the layer of `b` (a published list of this store) to `out`, reading each `.pyc` from
/// its object (opened without following a link); an object that is not a regular file of its
/// size and digest is an integrity error naming it. Returns the layer's digest.
BytecodeLayer write_bytecode_layer(const Store& store, const WheelBytecode& b,
                                   const std::filesystem::path& out);

/// A received layer being adopted, in parts that run in parallel (`adopt_bytecode_layer` is the
/// same, in one call). The constructor reads the header and the list and checks them against the
/// wheel's sha256 and the key; then each of `part_count()` calls of `store_part` stores a run of
/// `.pyc` files, `check_digest` hashes the whole file, and `check_sources` checks the list
/// against the stored wheel, in any order and on any threads, so the `.pyc` files can be stored
/// while the wheel itself is still being ingested. Once every one has returned, `adopted` gives
/// the list. The file is read with pread only, from one descriptor opened without following a
/// link. Refused (integrity, naming `what`): another header, wheel or key; a list other than
/// envbox writes it, or whose sources are not exactly the wheel's members
/// (`bytecode_sources`) of those digests, once each, with `sources` their count; a file whose
/// size is not the header's and the list's sums; a `.pyc` whose sha256 is not the list's, or
/// whose header is not the key's magic number and PEP 552 unchecked-hash flags; a file whose
/// bytes are not `sha256_hex`, the digest it was received under. A part refused stores no
/// `.pyc` after the fault; those stored before it, or by other parts, are objects no list names,
/// which gc sweeps; nothing names them until `adopted`.
class ReceivedLayer {
  public:
    // shape: the store, the file and its digest, what it is for, and how to name it.
    ReceivedLayer(const Store& store, const std::filesystem::path& path, std::string sha256_hex,
                  const std::string& wheel_sha256, const BytecodeKey& key, std::string what);
    ReceivedLayer(const ReceivedLayer&) = delete;
    ReceivedLayer& operator=(const ReceivedLayer&) = delete;
    ~ReceivedLayer();

    /// Runs of `.pyc` files: at most 256 files, of about 4 MiB.
    std::size_t part_count() const { return parts_.size(); }
    std::uint64_t part_bytes(std::size_t part) const;
    /// Checks and stores the `.pyc` files of `part` (thread-safe); `replace`: store each again
    /// even where an untouched object of its name is there (one found damaged by content).
    void store_part(std::size_t part, bool replace = false) const;
    /// Hashes the whole file against the digest it was received under (thread-safe).
    void check_digest() const;
    /// Checks the list's sources against `wheel`, the stored wheel whose sha256 the header
    /// names (call once, beside the parts).
    void check_sources(const WheelFiles& wheel);
    /// The list (`received` set), to publish with the generation's others; call once, after
    /// every part, the digest check and the sources check returned (else a generic error).
    WheelBytecode adopted();

  private:
    struct Part {
        std::size_t begin = 0, end = 0;  // into list_.files
        std::uint64_t offset = 0, bytes = 0;
    };
    void plan_parts();
    const Store& store_;
    std::filesystem::path path_;
    std::string sha256_hex_, what_;
    UniqueFd fd_;
    std::uint64_t size_ = 0;
    std::string head_;  // the header and the list, as read
    WheelBytecode list_;
    std::vector<Part> parts_;
    bool sources_checked_ = false;
};

/// The layer at `path` adopted in one call (ReceivedLayer's checks; its digest first, so a
/// changed file stores nothing): its `.pyc` files stored, its list returned.
// shape: the store, the file and its digest, what it is for, and how to name it.
WheelBytecode adopt_bytecode_layer(const Store& store, const std::filesystem::path& path,
                                   const std::string& sha256_hex, const WheelFiles& wheel,
                                   const BytecodeKey& key, const std::string& what);

}  // namespace envbox::store
