#pragma once
/// Bytecode in the store (docs/ARCHITECTURE.md, "Bytecode"): the `.pyc` of every module a wheel
/// installs into site-packages, compiled once per store for one interpreter and kept as an
/// ordinary object, so every environment with that wheel and that interpreter links it.
///
///   store-v1/wheels/<wheel sha256>/bytecode/<key name>   the wheel's bytecode list for a key
///
///   envbox-bytecode 1
///   key cpython-311-a70d0d0a-o0 / sources COUNT / compiled COUNT
///   received yes                                         only in a list taken from an artifact
///   <pyc sha256> <size> <source sha256> <member path>    one line per compiled source
///
/// The bytes of a `.pyc` are a function of the source's bytes, its path inside site-packages
/// (the `dfile`, relative, so the bytes do not depend on where an environment lives; the import
/// system puts the real path into `co_filename` when it loads the file) and the key.
/// Invalidation is always PEP 552 `unchecked-hash`: store sources are immutable and `verify`
/// checks sources and `.pyc` files alike, so no import needs to stat or hash a source, and a
/// copied environment (new mtimes) keeps valid bytecode.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/store/store.hpp"

namespace envbox::store {

/// What a `.pyc` is compiled for: the interpreter's PEP 3147 cache tag and its bytecode magic
/// number (two interpreters share bytecode only when both agree, as Python itself decides), and
/// the optimisation level.
struct BytecodeKey {
    std::string cache_tag;  ///< sys.implementation.cache_tag: "cpython-311"
    std::string magic;      ///< importlib.util.MAGIC_NUMBER in hex: "a70d0d0a"
    /// sys.flags.optimize: 0, 1 (-O), 2 (-OO), or more (PYTHONOPTIMIZE=3 names `.opt-3.pyc`,
    /// compiled as level 2: what Python itself does)
    int optimize = 0;

    /// "cpython-311-a70d0d0a-o0": the bytecode list's file name and the generation record's
    /// value. Throws (`invalid_input`) when a field could not name a file: a cache tag other
    /// than [a-z0-9_.] and '-', a magic that is not 8 hex digits, a level past 99.
    std::string name() const;
    /// The key `name()` wrote, or nullopt.
    static std::optional<BytecodeKey> parse(std::string_view name);
    /// The file name Python looks for in `__pycache__` for a source named `source_file`
    /// ("linear.py" → "linear.cpython-311.pyc", with -O "linear.cpython-311.opt-1.pyc").
    std::string pyc_name(std::string_view source_file) const;
    bool operator==(const BytecodeKey&) const = default;
};

/// A member of a wheel that gets bytecode: a `.py` file installed into site-packages (the
/// wheel's root, or its `.data/purelib` and `.data/platlib`; never its .dist-info, a
/// `__pycache__` it ships, scripts or data), and its path inside site-packages.
struct BytecodeSource {
    const WheelFile* member = nullptr;
    std::string dfile;  ///< "torch/nn/modules/linear.py"
};

/// The path inside site-packages of the member at `path` when it gets bytecode (as
/// `BytecodeSource`), else nullopt. `dist_info` is the wheel's .dist-info folder; empty, any
/// top folder named `*.dist-info` is passed over (all an ingest in progress can tell).
std::optional<std::string> bytecode_dfile(std::string_view path, std::string_view dist_info);

/// The members of `w` that get bytecode, in file-list order.
std::vector<BytecodeSource> bytecode_sources(const WheelFiles& w);

/// One compiled member.
struct BytecodeFile {
    std::string source;         ///< the `.py` member's path in the wheel
    std::string source_digest;  ///< the object it was compiled from
    WheelFile pyc;              ///< the `.pyc` object (`path` is `source`'s; never executable)
};

/// A wheel's bytecode for one key: every source of `bytecode_sources` that compiled. A source
/// the interpreter refuses (Python 2 syntax in a test folder, a template named `.py`) gets no
/// `.pyc`, as pip and uv leave it; it is counted, and never compiled again.
struct WheelBytecode {
    std::string wheel_sha256;
    BytecodeKey key;
    std::size_t sources = 0;  ///< members `bytecode_sources` named
    std::vector<BytecodeFile> files;
    /// Adopted from an artifact's layer (`adopt_bytecode_layer`), not compiled by this store: the
    /// list's `received yes` line. `pull --ignore-bytecode` compiles such a list again.
    bool received = false;

    std::uint64_t total_size() const;
};

/// The list's text. Throws (`integrity`) for a digest that is not hex or a path with a line
/// break.
std::string serialise_bytecode(const WheelBytecode& b);

/// The list of wheel `sha` for `key`, or nullopt when `text` is not exactly what
/// `serialise_bytecode` writes (header, key, counts, digests).
std::optional<WheelBytecode> parse_bytecode(const std::string& text, std::string_view sha,
                                            const BytecodeKey& key);

}  // namespace envbox::store
