#pragma once
/// Compiling modules for the store (docs/ARCHITECTURE.md, "Bytecode"): a pool of the
/// environment's own interpreter, each a long-lived worker fed source paths over a pipe, never one
/// process per file. What they compile is stored by the store (store/bytecode.hpp).

#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/env/interpreter.hpp"
#include "envbox/store/bytecode.hpp"

namespace envbox::env {

/// The key `in` compiles for at `optimize`. Throws (`invalid_input`) when the probe found no
/// cache tag or magic number (an interpreter that cannot write bytecode: compile nothing).
store::BytecodeKey bytecode_key(const Interpreter& in, int optimize);

/// The optimisation levels an environment gets bytecode for: 0, and the level PYTHONOPTIMIZE
/// gives `sys.flags.optimize` when `[run].env` sets it, read as CPython reads it ("2" → 2,
/// " +3" → 3, any other non-number → 1; empty or "0": none more).
std::vector<int> bytecode_levels(std::string_view pythonoptimize);

/// Sources larger than this are left to Python (no `.pyc`): a bound on what one hostile
/// member can make a worker hold (each worker also runs under a 2 GiB address-space limit).
constexpr std::uintmax_t kMaxBytecodeSource = 32u << 20;

/// One module compiled (`pyc`), or why the interpreter refused it (`error`: a SyntaxError, a
/// source too large, a worker that died or hung on it), or `missing`: there was no file to
/// compile.
struct CompileResult {
    std::optional<std::string> pyc;
    std::string error;
    bool missing = false;
};

/// Workers of one interpreter: `python -I -S -B` running a small loop that reads (level,
/// source path, the path it may have moved to, dfile) and answers with the PEP 552 unchecked-hash
/// `.pyc` bytes, compiled with `compile(source, dfile, "exec", dont_inherit=True, optimize=level)`
/// exactly as py_compile does. Started on first use, at most `workers` at a time; thread-safe.
/// Workers run at nice 10: `create` compiles beside its ingest, so the CPU goes to the ingest first
/// and to the compiler whenever the ingest waits.
class BytecodeCompiler {
  public:
    BytecodeCompiler(const Interpreter& in, unsigned workers);
    ~BytecodeCompiler();
    BytecodeCompiler(const BytecodeCompiler&) = delete;
    BytecodeCompiler& operator=(const BytecodeCompiler&) = delete;

    /// Compiles `source` (a store object) as `dfile` at `optimize`. A worker that dies or
    /// takes longer than `timeout_ms` on one file is replaced, and that file gets an error.
    CompileResult compile(const std::filesystem::path& source, std::string_view dfile, int optimize,
                          int timeout_ms = 300000);
    /// The same for the file at `source` or, when there is none there, at `moved_to`: a
    /// staged object is read where it is, or where its ingest has just moved it (a rename, so
    /// it is at one of the two). `missing` when neither path names a file.
    CompileResult compile(const std::filesystem::path& source,
                          const std::filesystem::path& moved_to, std::string_view dfile,
                          int optimize, int timeout_ms = 300000);
    /// Workers started so far (for the report).
    std::size_t started() const;

  private:
    struct Worker;
    std::unique_ptr<Worker> take();
    void give_back(std::unique_ptr<Worker> w);

    std::filesystem::path python_;
    unsigned max_workers_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Worker>> idle_;
    std::size_t started_ = 0;
};

}  // namespace envbox::env
