// Bytecode in the store: keys that name files, which members get a .pyc, the bytecode list's
// format (and what it refuses), compiled modules stored as objects, and the sweep of lists no
// generation links.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {

store::WheelFile member(std::string path, std::string_view content) {
    return {std::move(path), to_hex(sha256(content)), content.size(), false};
}

}  // namespace

TEST_CASE("BytecodeKey: a name per interpreter and level, read back; nothing else names a file",
          "[bytecode]") {
    const store::BytecodeKey k{"cpython-311", "a70d0d0a", 0};
    CHECK(k.name() == "cpython-311-a70d0d0a-o0");
    CHECK(store::BytecodeKey::parse(k.name()) == k);
    const store::BytecodeKey o2{"cpython-313t", "f30d0d0a", 2};
    CHECK(store::BytecodeKey::parse(o2.name()) == o2);
    CHECK(k.pyc_name("linear.py") == "linear.cpython-311.pyc");
    CHECK(o2.pyc_name("__init__.py") == "__init__.cpython-313t.opt-2.pyc");
    for (const char* bad : {"", "../etc", "a/b", "cpython 311", "cpython-311\n", "-x", ".x"})
        CHECK_THROWS_AS((store::BytecodeKey{bad, "a70d0d0a", 0}.name()), Error);
    for (const char* magic : {"", "a70d0d0", "A70D0D0A", "a70d0d0a0", "zzzzzzzz"})
        CHECK_THROWS_AS((store::BytecodeKey{"cpython-311", magic, 0}.name()), Error);
    CHECK_THROWS_AS((store::BytecodeKey{"cpython-311", "a70d0d0a", 100}.name()), Error);
    CHECK_THROWS_AS((store::BytecodeKey{"cpython-311", "a70d0d0a", -1}.name()), Error);
    const store::BytecodeKey o3{"cpython-311", "a70d0d0a", 3};  // PYTHONOPTIMIZE=3: .opt-3.pyc
    CHECK(store::BytecodeKey::parse(o3.name()) == o3);
    CHECK(o3.pyc_name("m.py") == "m.cpython-311.opt-3.pyc");
    for (const char* bad : {"", "cpython-311", "cpython-311-a70d0d0a", "cpython-311-a70d0d0a-o100",
                            "cpython-311-a70d0d0a-o03", "cpython-311-a70d0d0a-o",
                            "cpython/311-a70d0d0a-o0", "-a70d0d0a-o0", "cpython-311-A70D0D0A-o0"})
        CHECK_FALSE(store::BytecodeKey::parse(bad));
}

TEST_CASE("bytecode_sources: modules that land in site-packages, with their path there",
          "[bytecode]") {
    store::WheelFiles w;
    w.name = "pkg";
    w.version = "1.0";
    w.dist_info = "pkg-1.0.dist-info";
    for (const char* p :
         {"pkg/__init__.py", "pkg/sub/core.py", "pkg/data.txt",
          "pkg/__pycache__/core.cpython-311.pyc", "pkg/__pycache__/stale.py",
          "pkg-1.0.dist-info/METADATA", "pkg-1.0.dist-info/hook.py",
          "pkg-1.0.data/purelib/extra.py", "pkg-1.0.data/platlib/plat/mod.py",
          "pkg-1.0.data/scripts/tool.py", "pkg-1.0.data/data/share/x.py", "pkg/.py", "top.py"})
        w.files.push_back(member(p, p));
    std::vector<std::pair<std::string, std::string>> got;
    for (const auto& s : store::bytecode_sources(w))
        got.emplace_back(s.member->path, s.dfile);
    const std::vector<std::pair<std::string, std::string>> want = {
        {"pkg/__init__.py", "pkg/__init__.py"},
        {"pkg/sub/core.py", "pkg/sub/core.py"},
        {"pkg-1.0.data/purelib/extra.py", "extra.py"},
        {"pkg-1.0.data/platlib/plat/mod.py", "plat/mod.py"},
        {"top.py", "top.py"}};
    CHECK(got == want);
    // What an ingest in progress can tell, before it knows its .dist-info: the same, and any
    // top folder named *.dist-info passed over.
    for (const auto& f : w.files) {
        auto early = store::bytecode_dfile(f.path, {});
        auto it =
            std::find_if(want.begin(), want.end(), [&](auto& p) { return p.first == f.path; });
        CHECK(early == (it == want.end() ? std::nullopt : std::optional(it->second)));
    }
    CHECK_FALSE(store::bytecode_dfile("other-2.0.dist-info/hook.py", {}));
    CHECK(store::bytecode_dfile("other-2.0.dist-info/hook.py", "pkg-1.0.dist-info") ==
          "other-2.0.dist-info/hook.py");
}

TEST_CASE("bytecode list: written and read back; a damaged or planted one is refused",
          "[bytecode]") {
    store::WheelBytecode b;
    b.wheel_sha256 = std::string(64, 'a');
    b.key = {"cpython-311", "a70d0d0a", 1};
    b.sources = 3;
    for (const char* p : {"pkg/__init__.py", "pkg/a b/ünï.py"}) {
        store::BytecodeFile f;
        f.source = p;
        f.source_digest = to_hex(sha256(std::string(p)));
        f.pyc = member(p, std::string("pyc of ") + p);
        b.files.push_back(f);
    }
    const std::string text = store::serialise_bytecode(b);
    auto back = store::parse_bytecode(text, b.wheel_sha256, b.key);
    REQUIRE(back);
    REQUIRE(back->files.size() == 2);
    CHECK(back->sources == 3);
    CHECK(back->files[1].source == "pkg/a b/ünï.py");
    CHECK(back->files[1].pyc.digest == b.files[1].pyc.digest);
    CHECK(back->files[1].pyc.size == b.files[1].pyc.size);
    CHECK(back->files[1].source_digest == b.files[1].source_digest);
    CHECK(back->total_size() == b.total_size());

    // Another key, a count that does not match, a digest that is not hex, a cut: not a list.
    CHECK_FALSE(store::parse_bytecode(text, b.wheel_sha256, {"cpython-311", "a70d0d0a", 0}));
    std::string wrong_count = text;
    wrong_count.replace(wrong_count.find("compiled 2"), 10, "compiled 3");
    CHECK_FALSE(store::parse_bytecode(wrong_count, b.wheel_sha256, b.key));
    std::string not_hex = text;
    not_hex[not_hex.rfind('\n', not_hex.size() - 2) + 1] = 'Z';
    CHECK_FALSE(store::parse_bytecode(not_hex, b.wheel_sha256, b.key));
    CHECK_FALSE(store::parse_bytecode(text.substr(0, text.size() - 20), b.wheel_sha256, b.key));
    CHECK_FALSE(store::parse_bytecode("", b.wheel_sha256, b.key));

    // A path that would add a line is never written.
    b.files[0].source = "pkg/x.py\nplanted";
    CHECK_THROWS_AS(store::serialise_bytecode(b), Error);
}

TEST_CASE("Store::put_object: stored once, read-only, fixed mtime; a touched one replaced",
          "[bytecode]") {
    envboxtest::TempDir tmp("envbox-bytecode");
    store::Store store(tmp.path);
    const store::WheelFile f = store.put_object("compiled bytes");
    CHECK(f.digest == to_hex(sha256(std::string("compiled bytes"))));
    CHECK(f.size == 14);
    const fs::path p = store.object_path(f.digest, false);
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0444);
    CHECK(st.st_mtim.tv_sec == store::kObjectMtime);
    const ino_t first = st.st_ino;
    store.put_object("compiled bytes");  // present and untouched: kept
    REQUIRE(::stat(p.c_str(), &st) == 0);
    CHECK(st.st_ino == first);
    ::chmod(p.c_str(), 0644);  // touched: stored again
    store.put_object("compiled bytes");
    REQUIRE(::stat(p.c_str(), &st) == 0);
    CHECK(st.st_ino != first);
    CHECK((st.st_mode & 07777) == 0444);
    CHECK(read_file(p) == "compiled bytes");
    // Nothing is left in tmp/.
    CHECK(fs::is_empty(store.tmp_dir()));
}

TEST_CASE("bytecode lists: published, loaded, damaged ones refused, swept when not live",
          "[bytecode]") {
    envboxtest::TempDir tmp("envbox-bytecode");
    store::Store store(tmp.path);
    store::WheelFiles w;
    w.wheel_sha256 = std::string(64, 'b');
    w.filename = "pkg-1.0-py3-none-any.whl";
    w.name = "pkg";
    w.version = "1.0";
    w.dist_info = "pkg-1.0.dist-info";
    const store::WheelFile src = store.put_object("X = 1\n");
    w.files.push_back({"pkg/__init__.py", src.digest, src.size, false});
    const store::BytecodeKey k0{"cpython-311", "a70d0d0a", 0}, k1{"cpython-311", "a70d0d0a", 1};
    store::WheelBytecode b0, b1;
    for (auto* b : {&b0, &b1}) {
        b->wheel_sha256 = w.wheel_sha256;
        b->key = b == &b0 ? k0 : k1;
        b->sources = 1;
        store::BytecodeFile f;
        f.source = "pkg/__init__.py";
        f.source_digest = src.digest;
        f.pyc = store.put_object(b == &b0 ? "pyc level 0" : "pyc level 1");
        f.pyc.path = f.source;
        b->files.push_back(f);
    }
    store.publish({&w}, {&b0, &b1});
    auto loaded = store.load_bytecode(w.wheel_sha256, k1);
    REQUIRE(loaded);
    CHECK(loaded->files.at(0).pyc.digest == b1.files[0].pyc.digest);
    CHECK_FALSE(store.load_bytecode(w.wheel_sha256, {"cpython-312", "cb0d0d0a", 0}));
    CHECK_FALSE(store.damaged_objects(*loaded, true));
    CHECK(store.check(true, 1).clean());

    // Level 1 is no longer linked: its list and its .pyc go, level 0's stay.
    store::SweepOptions keep;
    keep.live_bytecode = {w.wheel_sha256 + "/" + k0.name()};
    const store::SweepResult r = store.sweep({w.wheel_sha256}, keep);
    CHECK(r.bytecode_removed == 1);
    CHECK(r.objects_removed == 1);
    CHECK_FALSE(store.load_bytecode(w.wheel_sha256, k1));
    CHECK(store.load_bytecode(w.wheel_sha256, k0));
    CHECK(fs::exists(store.object_path(b0.files[0].pyc.digest, false)));
    CHECK_FALSE(fs::exists(store.object_path(b1.files[0].pyc.digest, false)));

    // A list rewritten by hand is damage, not a list.
    const fs::path list =
        tmp.path / "store-v1" / "wheels" / w.wheel_sha256 / "bytecode" / k0.name();
    ::chmod(list.c_str(), 0644);
    write_file_atomic(list,
                      "envbox-bytecode 1\nkey " + k0.name() + "\nsources 1\ncompiled 1\n../../x\n",
                      0444, Durability::none);
    CHECK_THROWS_AS(store.load_bytecode(w.wheel_sha256, k0), Error);
    CHECK_FALSE(store.check(false, 1).clean());
}
