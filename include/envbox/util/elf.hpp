#pragma once
/// The facts the dynamic loader acts on, read from an ELF file's bytes: class and machine, SONAME,
/// DT_NEEDED, RPATH/RUNPATH, the dynamic symbols it exports (with their version) and the ones it
/// leaves undefined (with the version and library a version reference names). The input is
/// hostile (any wheel's file): every offset, size, count and string is checked against the
/// bytes before it is used, and a file that does not read is an `Error` (integrity), never a
/// read out of bounds. Read through the section headers (what `readelf --dyn-syms` reads); a
/// file without them (sstrip) is refused as unreadable.
///
/// envbox reads ELF itself rather than through elfutils' libelf: it needs five sections of one
/// kind of file, read from a mapped object with one set of bounds checks it can fuzz, and no
/// library's allocation and error model in the store's ingest path.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace envbox::elf {

/// One dynamic symbol. `version`: the version it is defined or required at (`GLIBC_2.34`), empty
/// when unversioned; `library`: for an undefined one, the file its version reference names
/// (`libc.so.6`), else empty.
struct Symbol {
    std::string name, version, library;
    bool weak = false;    ///< STB_WEAK: an undefined weak symbol may stay unresolved
    bool hidden = false;  ///< a non-default version (`name@VER`, not `name@@VER`)
    friend bool operator==(const Symbol&, const Symbol&) = default;
};

struct Facts {
    int elf_class = 0;    ///< 32 or 64
    int machine = 0;      ///< e_machine: 62 x86-64, 183 AArch64
    bool shared = false;  ///< ET_DYN (a library, an extension module or a PIE)
    std::string soname;
    std::vector<std::string> needed, rpath, runpath;  ///< rpath/runpath split at ':'
    std::vector<Symbol> exports;    ///< defined, global or weak, default or protected visibility
    std::vector<Symbol> undefined;  ///< undefined, global or weak
    friend bool operator==(const Facts&, const Facts&) = default;
};

/// Whether `head` (a file's first bytes) starts with the ELF magic.
bool is_elf(std::string_view head);

/// Bounds on what one file may hold.
struct Limits {
    std::uint64_t max_symbols = 4'000'000;
    std::size_t max_string = 64 * 1024;  ///< a symbol name or a path entry
    std::size_t max_entries = 4096;      ///< DT_NEEDED entries, version definitions and needs
};

/// The facts of the ELF file `bytes`; `what` names it in errors. Throws `Error` (integrity) when
/// it is not an ELF file envbox can read (bad magic, class or encoding, an offset or size
/// outside the file, a string without its NUL, a bound exceeded).
Facts read_facts(std::string_view bytes, const std::string& what, const Limits& limits = {});

}  // namespace envbox::elf
