// The bytecode compiler against the real interpreter: unchecked-hash pycs of its magic, the
// relative dfile in the bytes, refusals, one worker reused, a worker that dies replaced.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

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
    CHECK_FALSE(c.compile(tmp.path / "missing.py", "pkg/missing.py", 0).pyc);
    CHECK(c.started() == 1);  // one thread here: one worker, reused
}
