#pragma once
/// The link check: every native file an environment's wheels install, linked on paper the way
/// the dynamic loader would link it in that environment, before any job runs (docs/guarantees.md,
/// "Every native library links against its environment"). The ELF facts come from the store
/// (`Store::kept_elf_facts` and its steps, once per wheel); the host's own libraries are read where
/// they lie.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envbox/store/store.hpp"

namespace envbox::env {

/// One wheel of the environment, as the link check sees it.
struct LinkWheel {
    std::string name;             ///< the project's normalised name
    std::string filename;         ///< the wheel's file name
    std::string dist_info;        ///< "name-1.0.dist-info": its `.data` folder is "name-1.0.data"
    bool root_is_purelib = true;  ///< WHEEL's Root-Is-Purelib: its root goes to purelib
    const std::vector<store::ElfFile>* files = nullptr;
    /// Positions in `LinkInput::wheels` of the packages it depends on (the lock's
    /// `dependencies`); nullopt when the lock records none (every wheel then counts as one).
    std::optional<std::vector<std::size_t>> dependencies;
};

struct LinkInput {
    std::vector<LinkWheel> wheels;
    /// Where the scheme puts each kind of file, relative to the environment's root
    /// (`Interpreter::scheme`: purelib, platlib, scripts, data).
    std::string purelib, platlib, scripts, data;
    /// The loader's default folders on this host, in its order (`system_library_dirs`).
    std::vector<std::filesystem::path> system_dirs;
    /// The base interpreter's executable: what it and its libraries export (Python's C API)
    /// every file loaded into the process may use.
    std::filesystem::path interpreter;
    std::optional<int> cuda_major;  ///< the environment's CUDA line, when it has one
};

/// What the check found in one file.
struct LinkFinding {
    enum class Kind {
        not_found,       ///< a needed library found nowhere (a note: optional back-ends)
        cuda_line,       ///< a CUDA library of another line (refused, as a name-based conflict)
        missing_symbol,  ///< a symbol that the environment's library it comes from lacks (refused)
        unresolved,      ///< symbols no library in reach exports, none to blame (a note)
        unreadable,      ///< a file whose ELF facts did not read (a note)
    };
    Kind kind = Kind::not_found;
    std::string package, wheel;  ///< the wheel holding the file
    std::string file;            ///< the file, relative to the environment's root
    std::string what;            ///< the library (`libcudart.so.12`) or symbol (demangled) at fault
    std::string message;  ///< one line that says it all, naming file, wheel and what is missing
    /// A CUDA-line finding in a wheel that also ships a file for the environment's line
    /// (bitsandbytes' per-CUDA libraries, one picked at run time): a note.
    bool variant = false;
    bool allowed = false;  ///< refuses, but `[install].allow-unlinked` names the package
    bool refuses() const {
        return (kind == Kind::cuda_line && !variant) || kind == Kind::missing_symbol;
    }
    const char* kind_name() const;  ///< "not-found", "cuda-line", "missing-symbol", …
};

/// What a link check found, over how many native files, in how long.
struct LinkReport {
    std::vector<LinkFinding> findings;
    std::size_t native_files = 0;  ///< ELF files the check linked
    double seconds = 0;
    double facts_seconds = 0;  ///< of `seconds`: the ELF facts read (from the store or objects)
    /// The host's files the check read (real paths): the interpreter and the libraries found
    /// on the host. A result kept for later is good while none of them changed.
    std::vector<std::string> host_files;
    bool cached = false;  ///< read from the home's cache of link results
};

/// Links every native file of `in` on paper (env/link_check.cpp):
/// - each DT_NEEDED is looked up as the loader does: RPATH (without RUNPATH) and RUNPATH with
///   `$ORIGIN`, then by SONAME among the libraries of the wheel and the wheels it depends on
///   (transitively; what `import` of those loaded before), then the host's folders;
/// - a CUDA runtime or math library (`libcudart.so.N`, `libcufft.so.N`, …) is checked against
///   the CUDA lines whose toolkit ships that major (`cuda_lines_of_library`);
/// - each undefined, non-weak symbol against what the file's resolved libraries export
///   (transitively), plus the interpreter and its libraries.
/// Findings come sorted by file; a file's symbols are reported up to a bound, with a count.
/// The report's `findings` and `host_files`; its figures are the caller's.
LinkReport link_environment(const LinkInput& in);

/// The CUDA major lines whose toolkit ships `soname` (`libcufft.so.12` → {13}; `libcusparse.so.12`
/// → {12, 13}); nullopt for a library that is no CUDA runtime or math library.
std::optional<std::vector<int>> cuda_lines_of_library(const std::string& soname);

/// The loader's default folders on this host: those /etc/ld.so.conf names (with its includes),
/// then the multiarch and plain lib folders.
std::vector<std::filesystem::path> system_library_dirs();

/// `symbol` demangled (`c10::TensorImpl::is_contiguous_custom(…) const`); as it is when it is
/// not a mangled C++ name or is too long to demangle.
std::string demangle(const std::string& symbol);

}  // namespace envbox::env
