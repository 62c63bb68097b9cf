// Bytecode in the store: keys that name files, which members get a .pyc, the bytecode list's
// format (and what it refuses), compiled modules stored as objects, the sweep of lists no
// generation links, and the layer a list travels in (and what a receiving store refuses).
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "envbox/store/bytecode.hpp"
#include "envbox/store/bytecode_layer.hpp"
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

TEST_CASE(
    "Store::put_object: stored once (linked in whole), read-only, fixed mtime; a touched "
    "one replaced",
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

namespace {

// A .pyc as CPython writes an unchecked-hash one: magic, flags 1, an 8-byte source hash, code.
std::string pyc_bytes(std::string_view magic_hex, std::string_view code, unsigned flags = 1) {
    std::string out;
    for (std::size_t i = 0; i < 8; i += 2)
        out += static_cast<char>(std::stoi(std::string(magic_hex.substr(i, 2)), nullptr, 16));
    out += std::string{static_cast<char>(flags), 0, 0, 0};
    out += std::string(8, 'h');
    return out + std::string(code);
}

// A wheel of two modules (or `modules`) and a data file, stored, with its level-0 list for `k`
// published.
struct LayerWorld {
    envboxtest::TempDir tmp{"envbox-layer"};
    store::Store store{tmp.path};
    store::WheelFiles w;
    store::WheelBytecode list;
    store::BytecodeKey k{"cpython-311", "a70d0d0a", 0};
    explicit LayerWorld(std::size_t modules = 2) {
        w.wheel_sha256 = std::string(64, 'c');
        w.filename = "pkg-1.0-py3-none-any.whl";
        w.name = "pkg";
        w.version = "1.0";
        w.dist_info = "pkg-1.0.dist-info";
        list.wheel_sha256 = w.wheel_sha256;
        list.key = k;
        std::vector<std::string> paths = {"pkg/__init__.py", "pkg/mod.py"};
        for (std::size_t i = 2; i < modules; ++i)
            paths.push_back("pkg/m" + std::to_string(i) + ".py");
        for (const std::string& path : paths) {
            store::WheelFile src = store.put_object("# " + path + "\n");
            src.path = path;
            w.files.push_back(src);
            store::BytecodeFile f;
            f.source = path;
            f.source_digest = src.digest;
            f.pyc = store.put_object(pyc_bytes(k.magic, path));
            f.pyc.path = path;
            list.files.push_back(f);
        }
        store::WheelFile data = store.put_object("data");
        data.path = "pkg/data.txt";
        w.files.push_back(data);
        list.sources = paths.size();
        store.publish({&w}, {&list});
    }
};

}  // namespace

TEST_CASE("bytecode layer: the same list writes the same bytes, and a node adopts it",
          "[bytecode]") {
    LayerWorld a;
    const fs::path one = a.tmp.path / "one.layer", two = a.tmp.path / "two.layer";
    const store::BytecodeLayer l1 = store::write_bytecode_layer(a.store, a.list, one);
    const store::BytecodeLayer l2 = store::write_bytecode_layer(a.store, a.list, two);
    CHECK(l1.sha256 == l2.sha256);
    CHECK(l1.size == fs::file_size(one));
    CHECK(to_hex(sha256_file(one)) == l1.sha256);

    // A node that stored the same wheel (its file list) but no .pyc.
    envboxtest::TempDir node("envbox-layer-node");
    store::Store other(node.path);
    for (const auto& f : a.w.files)
        other.put_object(read_file(a.store.object_path(f.digest, false)));
    other.publish({&a.w}, {});
    const store::WheelBytecode got =
        store::adopt_bytecode_layer(other, one, l1.sha256, a.w, a.k, "layer");
    REQUIRE(got.files.size() == 2);
    CHECK(got.received);
    other.publish({&a.w}, {&got});
    const auto loaded = other.load_bytecode(a.w.wheel_sha256, a.k);
    REQUIRE(loaded);
    // Kept as received (`pull --ignore-bytecode` compiles it again), the same files otherwise.
    CHECK(loaded->received);
    CHECK(serialise_bytecode(*loaded).find("\nreceived yes\n") != std::string::npos);
    store::WheelBytecode plain = *loaded;
    plain.received = false;
    CHECK(serialise_bytecode(plain) == serialise_bytecode(a.list));
    CHECK_FALSE(other.damaged_objects(*loaded, true));

    // A node passes on what it received: the layer it writes carries the mark, and reads back.
    const fs::path three = node.path / "three.layer";
    const store::BytecodeLayer l3 = store::write_bytecode_layer(other, *loaded, three);
    CHECK(l3.sha256 != l1.sha256);
    CHECK(store::adopt_bytecode_layer(a.store, three, l3.sha256, a.w, a.k, "layer").received);
}

TEST_CASE("bytecode layer: what a hostile layer may not do", "[bytecode]") {
    LayerWorld a;
    const fs::path good = a.tmp.path / "good.layer";
    store::write_bytecode_layer(a.store, a.list, good);
    const std::string bytes = read_file(good);
    auto refused = [&](const std::string& layer, const store::BytecodeKey& key,
                       const std::string& why) {
        const fs::path p = a.tmp.path / "bad.layer";
        write_file_atomic(p, layer, 0644, Durability::none);
        try {
            store::adopt_bytecode_layer(a.store, p, to_hex(sha256(layer)), a.w, key, "the layer");
            FAIL("accepted: " << why);
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::integrity);
            CHECK_THAT(e.message(), Catch::Contains("the layer"));
        }
    };
    // Its header: another wheel, another key, another format.
    refused(bytes, {"cpython-312", "cb0d0d0a", 0}, "another key");
    std::string other = bytes;
    other.replace(other.find("wheel ") + 6, 4, "dddd");
    refused(other, a.k, "another wheel");
    refused("envbox-bytecode-layer 2\n" + bytes.substr(bytes.find('\n') + 1), a.k, "format 2");
    refused(bytes.substr(0, bytes.size() - 1), a.k, "one byte short");
    refused(bytes + "x", a.k, "one byte more");
    // A .pyc whose bytes are not the list's digest (the last byte of the file changed).
    std::string flipped = bytes;
    flipped.back() ^= 1;
    refused(flipped, a.k, "a .pyc not its digest");

    // Lists that do not fit the wheel: a module of another digest, a file that is no module,
    // the same module twice, another module count.
    auto with_list = [&](store::WheelBytecode b, std::vector<std::string> pycs) {
        const std::string text = serialise_bytecode(b);
        std::string out = "envbox-bytecode-layer 1\nwheel " + b.wheel_sha256 + "\nkey " +
                          b.key.name() + "\nlist " + std::to_string(text.size()) + "\n" + text;
        for (const auto& p : pycs)
            out += p;
        return out;
    };
    const std::string p0 = read_file(a.store.object_path(a.list.files[0].pyc.digest, false));
    const std::string p1 = read_file(a.store.object_path(a.list.files[1].pyc.digest, false));
    {
        // A size written with a leading zero parses, but is not what envbox writes.
        std::string text = serialise_bytecode(a.list);
        const std::string field = " " + std::to_string(a.list.files[0].pyc.size) + " ";
        text.replace(text.find(field), field.size(), " 0" + field.substr(1));
        refused("envbox-bytecode-layer 1\nwheel " + a.w.wheel_sha256 + "\nkey " + a.k.name() +
                    "\nlist " + std::to_string(text.size()) + "\n" + text + p0 + p1,
                a.k, "a size with a leading zero");
    }
    store::WheelBytecode b = a.list;
    b.files[0].source_digest = std::string(64, 'e');
    refused(with_list(b, {p0, p1}), a.k, "a source of another digest");
    b = a.list;
    b.files[1].source = "pkg/data.txt";
    b.files[1].source_digest = a.w.files[2].digest;
    refused(with_list(b, {p0, p1}), a.k, "a data file as a module");
    b = a.list;
    b.files[1] = b.files[0];
    refused(with_list(b, {p0, p0}), a.k, "a module twice");
    b = a.list;
    b.sources = 3;
    refused(with_list(b, {p0, p1}), a.k, "three modules counted");
    // A .pyc of another interpreter's magic, or checked-hash flags, though its digest is right.
    for (const std::string& pyc :
         {pyc_bytes("cb0d0d0a", "pkg/__init__.py"), pyc_bytes(a.k.magic, "pkg/__init__.py", 3)}) {
        b = a.list;
        const store::WheelFile stored = a.store.put_object(pyc);
        b.files[0].pyc.digest = stored.digest;
        b.files[0].pyc.size = stored.size;
        refused(with_list(b, {pyc, p1}), a.k, "another magic or flags");
    }
    // The file is not the digest it was received under (changed since), though whole.
    const fs::path moved = a.tmp.path / "moved.layer";
    write_file_atomic(moved, bytes, 0644, Durability::none);
    CHECK_THROWS_AS(
        store::adopt_bytecode_layer(a.store, moved, std::string(64, 'a'), a.w, a.k, "the layer"),
        Error);
    // A link where the layer should be is never followed.
    const fs::path link = a.tmp.path / "link.layer";
    fs::create_symlink(good, link);
    CHECK_THROWS_AS(
        store::adopt_bytecode_layer(a.store, link, to_hex(sha256(bytes)), a.w, a.k, "the layer"),
        Error);
    // Only the list's own sources are adopted: the good layer still is.
    CHECK(store::adopt_bytecode_layer(a.store, good, to_hex(sha256(bytes)), a.w, a.k, "layer")
              .files.size() == 2);
}

TEST_CASE(
    "bytecode layer: adopted in parts on several threads, each part checked on its own, "
    "the sources against the wheel once it is stored",
    "[bytecode]") {
    LayerWorld a(600);
    const fs::path path = a.tmp.path / "many.layer";
    const store::BytecodeLayer written = store::write_bytecode_layer(a.store, a.list, path);
    envboxtest::TempDir node("envbox-layer-node");
    store::Store other(node.path);
    for (const auto& f : a.w.files)
        other.put_object(read_file(a.store.object_path(f.digest, false)));
    other.publish({&a.w}, {});

    // 600 files: runs of at most 256, stored in any order beside the digest's check, before
    // the wheel is known; the list is given only once its sources were checked against it.
    store::ReceivedLayer layer(other, path, written.sha256, a.w.wheel_sha256, a.k, "layer");
    REQUIRE(layer.part_count() == 3);
    std::vector<std::thread> threads;
    threads.emplace_back([&] { layer.check_digest(); });
    for (std::size_t part = layer.part_count(); part-- > 0;)
        threads.emplace_back([&layer, part] { layer.store_part(part); });
    for (auto& t : threads)
        t.join();
    CHECK_THROWS_WITH(layer.adopted(), Catch::Contains("before its sources were checked"));
    // A wheel whose module is not the one the list was compiled from: refused, naming it.
    store::WheelFiles changed = a.w;
    changed.files[0].digest = std::string(64, 'd');
    CHECK_THROWS_WITH(layer.check_sources(changed),
                      Catch::Contains("names pkg/__init__.py, not a module of the wheel"));
    store::WheelFiles another = a.w;
    another.wheel_sha256 = std::string(64, 'e');
    CHECK_THROWS_WITH(layer.check_sources(another), Catch::Contains("is not the layer of wheel"));
    layer.check_sources(a.w);
    store::WheelBytecode got = layer.adopted();
    CHECK(got.received);
    got.received = false;
    CHECK(serialise_bytecode(got) == serialise_bytecode(a.list));
    CHECK_FALSE(other.damaged_objects(got, true));

    // The last .pyc changed: only the part that holds it is refused, naming its module, and
    // the whole file is not the digest it was received under.
    std::string bytes = read_file(path);
    bytes.back() ^= 1;
    const fs::path bad = a.tmp.path / "bad.layer";
    write_file_atomic(bad, bytes, 0644, Durability::none);
    store::ReceivedLayer damaged(other, bad, written.sha256, a.w.wheel_sha256, a.k,
                                 "the bad layer");
    damaged.store_part(0);
    try {
        damaged.store_part(2);
        FAIL("a changed .pyc was stored");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::integrity);
        CHECK_THAT(e.message(), Catch::Contains("the bad layer: pkg/m599.py's .pyc is not"));
    }
    CHECK_THROWS_WITH(damaged.check_digest(), Catch::Contains("changed after it was received"));
}
