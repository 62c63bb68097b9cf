// The bytecode compiler against the real interpreter: unchecked-hash pycs of its magic, the
// relative dfile in the bytes, refusals, one worker reused, a worker that dies replaced.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "envbox/env/bytecode.hpp"
#include "envbox/env/interpreter.hpp"
#include "envbox/util/fs.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

TEST_CASE("bytecode_levels: 0, and the level PYTHONOPTIMIZE asks for", "[bytecode]") {
    CHECK(env::bytecode_levels("") == std::vector<int>{0});
    CHECK(env::bytecode_levels("0") == std::vector<int>{0});
    CHECK(env::bytecode_levels("1") == std::vector<int>{0, 1});
    CHECK(env::bytecode_levels("2") == std::vector<int>{0, 2});
    CHECK(env::bytecode_levels("7") == std::vector<int>{0, 7});  // .opt-7.pyc, as Python names it
    // As CPython reads the variable: strtol's blanks and sign; anything else is 1.
    CHECK(env::bytecode_levels(" +3") == std::vector<int>{0, 3});
    CHECK(env::bytecode_levels("yes") == std::vector<int>{0, 1});
    CHECK(env::bytecode_levels("2x") == std::vector<int>{0, 1});
    CHECK(env::bytecode_levels("-2") == std::vector<int>{0, 1});
    CHECK(env::bytecode_levels("99999999999999") == std::vector<int>{0, 1});
}

TEST_CASE("BytecodeCompiler: the interpreter's own pycs, compiled as the relative dfile",
          "[bytecode]") {
    envboxtest::TempDir tmp("envbox-compile");
    const env::Interpreter in = env::probe_interpreter("/usr/bin/python3", tmp.path / "probe");
    REQUIRE_FALSE(in.cache_tag.empty());
    REQUIRE(in.magic.size() == 8);
    const store::BytecodeKey key = env::bytecode_key(in, 0);
    CHECK(key.cache_tag == in.cache_tag);

    write_file_atomic(tmp.path / "good.py", "def f():\n    \"\"\"Doc.\"\"\"\n    return 'x' * 3\n",
                      0444, Durability::none);
    write_file_atomic(tmp.path / "bad.py", "def f(:\n", 0444, Durability::none);
    env::BytecodeCompiler c(in, 2);
    env::CompileResult r = c.compile(tmp.path / "good.py", "pkg/good.py", 0);
    REQUIRE(r.pyc);
    std::string magic;
    for (std::size_t i = 0; i < 4; ++i) {
        static const char* hex = "0123456789abcdef";
        const auto b = static_cast<unsigned char>((*r.pyc)[i]);
        magic += hex[b >> 4];
        magic += hex[b & 15];
    }
    CHECK(magic == in.magic);
    CHECK((*r.pyc)[4] == 1);  // flags: hash-based, unchecked
    CHECK(r.pyc->find("pkg/good.py") != std::string::npos);
    CHECK(r.pyc->find(tmp.path.string()) == std::string::npos);
    // Same source, same dfile, same level: the same bytes (what sharing rests on).
    CHECK(c.compile(tmp.path / "good.py", "pkg/good.py", 0).pyc == r.pyc);
    CHECK(c.compile(tmp.path / "good.py", "pkg/good.py", 2).pyc != r.pyc);

    env::CompileResult bad = c.compile(tmp.path / "bad.py", "pkg/bad.py", 0);
    CHECK_FALSE(bad.pyc);
    CHECK(bad.error.find("SyntaxError") != std::string::npos);
    env::CompileResult missing = c.compile(tmp.path / "missing.py", "pkg/missing.py", 0);
    CHECK_FALSE(missing.pyc);
    CHECK(missing.missing);
    CHECK_FALSE(bad.missing);
    CHECK(c.started() == 1);  // one thread here: one worker, reused
}

TEST_CASE(
    "BytecodeCompiler: a staged source read where it moved to; sources past the bound "
    "refused",
    "[bytecode]") {
    envboxtest::TempDir tmp("envbox-compile");
    const env::Interpreter in = env::probe_interpreter("/usr/bin/python3", tmp.path / "probe");
    write_file_atomic(tmp.path / "moved.py", "X = 1\n", 0444, Durability::none);
    env::BytecodeCompiler c(in, 1);
    const env::CompileResult direct = c.compile(tmp.path / "moved.py", "pkg/m.py", 0);
    REQUIRE(direct.pyc);
    // Gone from where it was staged (renamed into the store): read at the second path.
    const env::CompileResult moved =
        c.compile(tmp.path / "staged.py", tmp.path / "moved.py", "pkg/m.py", 0);
    CHECK(moved.pyc == direct.pyc);
    // At the first path when it is there.
    write_file_atomic(tmp.path / "staged.py", "X = 2\n", 0444, Durability::none);
    CHECK(c.compile(tmp.path / "staged.py", tmp.path / "moved.py", "pkg/m.py", 0).pyc !=
          direct.pyc);
    const env::CompileResult neither =
        c.compile(tmp.path / "a.py", tmp.path / "b.py", "pkg/m.py", 0);
    CHECK(neither.missing);
    CHECK_FALSE(neither.pyc);

    // One byte past the bound: refused, whatever its content, and the worker goes on.
    std::string big(env::kMaxBytecodeSource + 1, '#');
    write_file_atomic(tmp.path / "big.py", big, 0444, Durability::none);
    const env::CompileResult refused = c.compile(tmp.path / "big.py", "pkg/big.py", 0);
    CHECK_FALSE(refused.pyc);
    CHECK_FALSE(refused.missing);
    CHECK(refused.error.find("larger than 32 MiB") != std::string::npos);
    big.pop_back();  // at the bound: a comment, compiled
    write_file_atomic(tmp.path / "big.py", big, 0444, Durability::none);
    CHECK(c.compile(tmp.path / "big.py", "pkg/big.py", 0).pyc);

    // A file that holds more than its size says (a FIFO's is 0) is read on to the bound, not
    // cut at its size plus one byte: the same .pyc as the regular file with the same source.
    const std::string src = "x = 1\ny = [x] * 2\n";
    write_file_atomic(tmp.path / "same.py", src, 0444, Durability::none);
    const fs::path fifo = tmp.path / "fifo.py";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << src; });
    const env::CompileResult piped = c.compile(fifo, "pkg/same.py", 0);
    writer.join();
    REQUIRE(piped.pyc);
    CHECK(*piped.pyc == *c.compile(tmp.path / "same.py", "pkg/same.py", 0).pyc);
    CHECK(c.started() == 1);
}
