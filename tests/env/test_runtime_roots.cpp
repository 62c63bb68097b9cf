#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "envbox/env/generation.hpp"

using envbox::env::RuntimeRoots;
namespace fs = std::filesystem;
using namespace std::string_literals;

namespace {

// A /proc of made-up processes: the scan reads only links and text files, so a directory of
// the same shape exercises it exactly (the real /proc is the black-box tests' business).
struct FakeProc {
    fs::path root;
    FakeProc() {
        std::string tmpl = (fs::temp_directory_path() / "envbox-proc-XXXXXX").string();
        root = ::mkdtemp(tmpl.data());
    }
    ~FakeProc() { fs::remove_all(root); }
    fs::path process(int pid, const std::string& comm) {
        fs::path p = root / std::to_string(pid);
        fs::create_directories(p / "fd");
        std::ofstream(p / "comm") << comm << "\n";
        return p;
    }
};

void write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("runtime roots: exact generation directories from links, maps and environ") {
    FakeProc proc;
    const fs::path env = proc.root / "envs" / "proj" / "train";
    const fs::path gen1 = env / "gen-1", gen10 = env / "gen-10", gen2 = env / "gen-2",
                   gen3 = env / "gen-3";
    for (const auto& g : {gen1, gen10, gen2, gen3})
        fs::create_directories(g / "lib");

    // pid 100 works in gen-10 only: gen-1 is a prefix of its path, not a parent of it.
    fs::create_directory_symlink(gen10 / "lib", proc.process(100, "python3") / "cwd");
    // pid 200 has a gen-2 library mapped (deleted since), and nothing open.
    write(proc.process(200, "ide") / "maps",
          "7f00-7f01 r--p 00000000 fd:01 42   " + (gen2 / "lib" / "_c.so").string() +
              " (deleted)\n"
              "7f02-7f03 rw-p 00000000 00:00 0 \n7ffd-7ffe rw-p 00000000 00:00 0   [stack]\n");
    // pid 300 was started from an activated gen-3: only its environment names it.
    write(proc.process(300, "bash") / "environ", "HOME=/root\0PATH=/usr/bin:"s +
                                                     (gen3 / "bin").string() + "\0VIRTUAL_ENV="s +
                                                     gen3.string() + "-old\0"s);
    // Entries that are not processes, and a process whose files cannot be read, are skipped.
    fs::create_directories(proc.root / "self");
    proc.process(400, "gone");

    RuntimeRoots roots({gen1, gen10, gen2, gen3}, proc.root);
    CHECK(!roots.user_of(gen1));
    REQUIRE(roots.user_of(gen10));
    CHECK(*roots.user_of(gen10) ==
          "pid 100 (python3), whose working directory is " + (gen10 / "lib").string());
    REQUIRE(roots.user_of(gen2));
    CHECK(roots.user_of(gen2)->starts_with("pid 200 (ide), which maps " +
                                           (gen2 / "lib" / "_c.so").string()));
    REQUIRE(roots.user_of(gen3));
    CHECK(*roots.user_of(gen3) ==
          "pid 300 (bash), whose environment names " + (gen3 / "bin").string());
}

TEST_CASE("runtime roots: an open file counts, a sibling directory does not") {
    FakeProc proc;
    const fs::path gen = proc.root / "envs" / "p" / "e" / "gen-4";
    fs::create_directories(gen / ".envbox");
    fs::create_directories(proc.root / "envs" / "p" / "e" / "gen-40");
    auto p = proc.process(500, "job");
    fs::create_symlink(gen / ".envbox" / "in-use", p / "fd" / "3");
    fs::create_symlink(proc.root / "envs" / "p" / "e" / "gen-40" / "x", p / "fd" / "4");
    RuntimeRoots roots({gen, proc.root / "envs" / "p" / "e" / "gen-40"}, proc.root);
    REQUIRE(roots.user_of(gen));
    CHECK(roots.user_of(gen)->find("which has") != std::string::npos);
    REQUIRE(roots.user_of(proc.root / "envs" / "p" / "e" / "gen-40"));
    CHECK(!RuntimeRoots({}, proc.root).user_of(gen));
}
