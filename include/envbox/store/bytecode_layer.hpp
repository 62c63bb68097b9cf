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
/// hostile where it enters: `adopt_bytecode_layer` checks it against the wheel the node stored
/// (by the lock's sha256) before any `.pyc` enters the store. What no check can prove is that a
/// `.pyc` is the compiled form of its source: that is the builder's word (docs/SECURITY.md).

#include <cstdint>
#include <filesystem>
#include <string>

#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"

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

/// Reads the layer at `path` (a regular file, no link followed; its bytes must hash to
/// `sha256_hex`, the digest it was received under) for the stored wheel `wheel` and `key` and
/// stores its `.pyc` files as objects; returns the list (`received` set), to publish with the
/// generation's others. Refused (integrity, naming `what`), before any `.pyc` after the fault is
/// stored (those before it are objects no list names, which gc sweeps): another header, wheel
/// or key; a list other than envbox writes it, or whose sources are not exactly the wheel's
/// members (`bytecode_sources`) of those digests, once each, with `sources` their count; a file
/// whose size is not the header's and the list's sums; a `.pyc` whose sha256 is not the list's,
/// or whose header is not the key's magic number and PEP 552 unchecked-hash flags; a file whose
/// bytes are not `sha256_hex`.
// shape: the store, the file and its digest, what it is for, and how to name it.
WheelBytecode adopt_bytecode_layer(const Store& store, const std::filesystem::path& path,
                                   const std::string& sha256_hex, const WheelFiles& wheel,
                                   const BytecodeKey& key, const std::string& what);

}  // namespace envbox::store
