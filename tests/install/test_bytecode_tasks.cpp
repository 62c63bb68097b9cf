// The install layer's compile tasks (src/install/bytecode.cpp) against the real interpreter and a
// real ingest: modules compiled while their wheel is still being stored, their .pyc held until the
// wheel is, and a staged source read where its ingest moved it.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "envbox/install/bytecode.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"
#include "stored_zip.hpp"
#include "temp_dir.hpp"

using namespace envbox;
using namespace envbox::install;
namespace fs = std::filesystem;

namespace {

// demo 1.0 of `files` and its .dist-info; RECORD lists every member (with `damaged`, that
// member with a wrong hash).
fs::path write_wheel(const fs::path& dir, std::vector<envboxtest::ZipMember> files,
                     const std::string& damaged = {}) {
    files.push_back(
        {"demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"});
    files.push_back({"demo-1.0.dist-info/WHEEL",
                     "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: "
                     "py3-none-any\n"});
    std::string record;
    for (const auto& f : files)
        record += f.name + ",sha256=" + to_record_b64(sha256(f.name == damaged ? "x" : f.content)) +
                  "," + std::to_string(f.content.size()) + "\n";
    files.push_back({"demo-1.0.dist-info/RECORD", record + "demo-1.0.dist-info/RECORD,,\n"});
    const fs::path path = dir / "demo-1.0-py3-none-any.whl";
    std::ofstream(path, std::ios::binary) << envboxtest::stored_zip(files);
    return path;
}

// Two modules, one the interpreter refuses, a data file, and a .dist-info module that gets no
// bytecode (with `damage`, the data file fails its RECORD hash).
fs::path write_wheel(const fs::path& dir, bool damage = false) {
    return write_wheel(dir,
                       {
                           {"demo/__init__.py", "from .core import f\n"},
                           {"demo/core.py", "def f():\n    return 42\n"},
                           {"demo/broken.py", "def f(:\n"},
                           {"demo/data.txt", "not a module\n"},
                           {"demo-1.0.dist-info/hook.py", "X = 1\n"},
                       },
                       damage ? "demo/data.txt" : "");
}

std::size_t object_count(const store::Store& store) {
    std::size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(store.layout().objects()))
        n += e.is_regular_file();
    return n;
}

struct World {
    envboxtest::TempDir tmp{"envbox-create-bytecode"};
    store::Store store{tmp.path / "home"};
    env::Interpreter in = env::probe_interpreter("/usr/bin/python3", tmp.path / "probe");
    Progress progress;
    Item item;

    explicit World(const fs::path& wheel) {
        item.sha256 = to_hex(sha256_file(wheel));
        item.filename = wheel.filename().string();
        item.bytecode.push_back({env::bytecode_key(in, 0), std::nullopt, true, false, {}});
    }
    store::Ingest ingest(const fs::path& wheel) {
        return store::Ingest(store, wheel, item.sha256, item.filename, true);
    }
};

// Every task of the ingest, one after another: the members each stored.
std::vector<store::IngestedMember> run_ingest(store::Ingest& ingest) {
    std::vector<store::IngestedMember> members;
    for (std::size_t t = 0; t < ingest.task_count(); ++t) {
        ingest.run_task(t);
        for (auto& m : ingest.ingested_members(t))
            members.push_back(std::move(m));
    }
    return members;
}

// The ingest's tasks as create runs them, each adding its modules' compile tasks.
void ingest_and_compile(store::Ingest& ingest, BytecodeTasks& tasks, Item& item, unsigned jobs) {
    TaskPool pool(jobs, BytecodeTasks::kLanes);
    for (std::size_t t = 0; t < ingest.task_count(); ++t)
        pool.add(
            1,
            [&, t](TaskPool& more) {
                ingest.run_task(t);
                tasks.add_ingested(item, ingest.ingested_members(t), more);
            },
            BytecodeTasks::kIngestLane);
    pool.run();
}

// Once the wheel is stored: its `.pyc` files stored (compiling what was not), the counts.
BytecodeReport store_bytecode(BytecodeTasks& tasks, Item& item, unsigned jobs) {
    {
        TaskPool pool(jobs, BytecodeTasks::kLanes);
        tasks.add(item, pool);
        pool.run();
    }
    return tasks.finish().report;
}

}  // namespace

TEST_CASE("BytecodeTasks: modules compile while their wheel is stored, and enter the store after",
          "[install][bytecode]") {
    envboxtest::TempDir dir("envbox-create-bytecode-wheel");
    const fs::path wheel = write_wheel(dir.path);
    World w(wheel);
    BytecodeTasks tasks(w.store, w.in, 2, w.progress);
    store::Ingest ingest(w.store, wheel, w.item.sha256, w.item.filename, true);
    tasks.expect(w.item, ingest.file_count());
    ingest_and_compile(ingest, tasks, w.item, 2);
    // Every module compiled, and nothing in the store: the wheel is not checked yet.
    CHECK(object_count(w.store) == 0);
    w.item.wheel = ingest.finish();
    const std::size_t members = w.item.wheel->files.size();
    CHECK(object_count(w.store) == members);
    {
        TaskPool pool(2, BytecodeTasks::kLanes);
        tasks.add(w.item, pool);
        pool.run();
    }
    const auto [lists, r] = tasks.finish();
    CHECK(r.compiled == 2);
    CHECK(r.compiled_early == 2);  // none compiled again once the wheel was stored
    CHECK(r.compile_failed == 1);  // demo/broken.py
    REQUIRE(lists.size() == 1);
    CHECK(lists[0]->sources == 3);
    REQUIRE(lists[0]->files.size() == 2);
    CHECK(object_count(w.store) == members + 2);
    // The same bytes a compile of the stored source gives, for the same dfile.
    env::BytecodeCompiler again(w.in, 1);
    for (const auto& f : lists[0]->files) {
        const store::WheelFile* src = w.item.wheel->find(f.source);
        REQUIRE(src);
        CHECK(f.source_digest == src->digest);
        CHECK(read_file(w.store.object_path(f.pyc.digest, false)) ==
              again.compile(w.store.object_path(src->digest, false), f.source, 0).pyc.value());
    }
}

TEST_CASE(
    "BytecodeTasks: a staged source is read where its ingest moved it; a failed ingest "
    "leaves no .pyc",
    "[install][bytecode]") {
    envboxtest::TempDir dir("envbox-create-bytecode-wheel");
    SECTION("moved into the store before its compile task ran") {
        const fs::path wheel = write_wheel(dir.path);
        World w(wheel);
        BytecodeTasks tasks(w.store, w.in, 1, w.progress);
        store::Ingest ingest = w.ingest(wheel);
        tasks.expect(w.item, ingest.file_count());
        std::vector<store::IngestedMember> members = run_ingest(ingest);
        w.item.wheel = ingest.finish();  // every staged path is gone now
        {
            TaskPool pool(1, BytecodeTasks::kLanes);
            tasks.add_ingested(w.item, members, pool);
            pool.run();
        }
        const BytecodeReport r = store_bytecode(tasks, w.item, 1);
        CHECK(r.compiled == 2);
        CHECK(r.compiled_early == 2);
    }
    SECTION("a wheel that fails its RECORD after its modules compiled") {
        const fs::path wheel = write_wheel(dir.path, true);
        World w(wheel);
        BytecodeTasks tasks(w.store, w.in, 1, w.progress);
        {
            store::Ingest ingest = w.ingest(wheel);
            tasks.expect(w.item, ingest.file_count());
            ingest_and_compile(ingest, tasks, w.item, 1);
            CHECK_THROWS_WITH(ingest.finish(), Catch::Contains("demo/data.txt"));
        }
        CHECK(object_count(w.store) == 0);
        const BytecodeReport r = tasks.finish().report;
        CHECK(r.compiled == 0);
    }
}

TEST_CASE("BytecodeTasks::ingest_priority: tasks holding modules first, the most source first",
          "[install][bytecode]") {
    auto file = [](std::string path, std::uint64_t size) {
        store::WheelFile f;
        f.path = std::move(path);
        f.size = size;
        return f;
    };
    const std::vector<store::WheelFile> binary = {file("torch/lib/libtorch_cuda.so", 1ull << 30)};
    const std::vector<store::WheelFile> few = {file("demo/a.py", 100), file("demo/x.h", 1 << 20)};
    const std::vector<store::WheelFile> many = {file("demo/b.py", 5000), file("demo/c.py", 5000)};
    const std::vector<store::WheelFile> not_modules = {file("demo-1.0.dist-info/hook.py", 9000),
                                                       file("demo-1.0.data/scripts/t.py", 9000),
                                                       file("demo/data.txt", 9000)};
    const std::vector<store::WheelFile> too_big = {
        file("demo/huge.py", env::kMaxBytecodeSource + 1)};
    auto priority = [](const std::vector<store::WheelFile>& f, std::uint64_t cost) {
        return BytecodeTasks::ingest_priority(cost, f);
    };
    CHECK(priority(few, 1 << 20) > priority(binary, 1ull << 30));
    CHECK(priority(many, 10000) > priority(few, 1 << 20));
    CHECK(priority(not_modules, 27000) == 27000);
    CHECK(priority(too_big, 33 << 20) == 33 << 20);
    CHECK(priority(binary, 1ull << 30) == 1ull << 30);
    CHECK(priority({}, 500) == 500);  // the archive's digest
    // Below the fetch tasks, which come first of all.
    CHECK(priority(many, 10000) < UINT64_MAX - 1000);
}

TEST_CASE("BytecodeTasks: a module whose stored source a repair replaces waits for its wheel",
          "[install][bytecode]") {
    envboxtest::TempDir dir("envbox-create-bytecode-wheel");
    const fs::path wheel = write_wheel(dir.path);
    World w(wheel);
    {
        store::Ingest first = w.ingest(wheel);  // the store holds every member now
        run_ingest(first);
        first.finish();
    }
    // Another wheel of this create repairs demo/core.py's object: until it is stored, the
    // store's copy is the damaged one, so that module is not compiled from it early.
    const std::string core = to_hex(sha256(std::string("def f():\n    return 42\n")));
    BytecodeTasks tasks(w.store, w.in, 1, w.progress, {core});
    store::Ingest ingest = w.ingest(wheel);
    tasks.expect(w.item, ingest.file_count());
    ingest_and_compile(ingest, tasks, w.item, 1);
    w.item.wheel = ingest.finish();
    const BytecodeReport r = store_bytecode(tasks, w.item, 1);
    CHECK(r.compiled == 2);
    CHECK(r.compiled_early == 1);  // demo/__init__.py alone
}

TEST_CASE(
    "BytecodeTasks: once the wheel is stored, modules an early task is compiling are passed over "
    "first, not waited for",
    "[install][bytecode]") {
    // An early task compiles demo/a_slow.py (about 2.5 s of CPython's compiler) while the
    // pass after the wheel is stored starts on the same modules in file order, a_slow.py first.
    // It must store the twenty small modules' .pyc files while a_slow.py is still compiling:
    // waiting on it would leave its worker idle behind the early task.
    envboxtest::TempDir dir("envbox-create-bytecode-wheel");
    std::string slow;
    for (int i = 0; i < 250000; ++i)
        slow += "v" + std::to_string(i) + " = " + std::to_string(i) + " + 1\n";
    std::vector<envboxtest::ZipMember> files = {{"demo/a_slow.py", slow}};
    for (int i = 0; i < 20; ++i)
        files.push_back(
            {"demo/m" + std::to_string(10 + i) + ".py", "X = " + std::to_string(i) + "\n"});
    const fs::path wheel = write_wheel(dir.path, files);
    World w(wheel);
    BytecodeTasks tasks(w.store, w.in, 2, w.progress);
    store::Ingest ingest = w.ingest(wheel);
    tasks.expect(w.item, ingest.file_count());
    std::vector<store::IngestedMember> slow_member;
    for (auto& m : run_ingest(ingest))
        if (m.file.path == "demo/a_slow.py") slow_member.push_back(std::move(m));
    w.item.wheel = ingest.finish();
    const std::size_t members = w.item.wheel->files.size();
    REQUIRE(slow_member.size() == 1);
    std::atomic<bool> early_done{false};
    std::thread early([&] {
        TaskPool pool(1, BytecodeTasks::kLanes);
        tasks.add_ingested(w.item, slow_member, pool);
        pool.run();
        early_done = true;
    });
    // The early task claims a_slow.py as it starts, long before its compile ends.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::thread after([&] {
        TaskPool pool(1, BytecodeTasks::kLanes);
        tasks.add(w.item, pool);
        pool.run();
    });
    bool small_first = false;
    for (int i = 0; i < 2000 && !early_done; ++i) {
        if (object_count(w.store) == members + 20) {
            small_first = !early_done;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    early.join();
    after.join();
    CHECK(small_first);
    const BytecodeReport r = tasks.finish().report;
    CHECK(r.compiled == 21);
    CHECK(r.compiled_early == 1);  // a_slow.py, taken from the early task's slot
    CHECK(r.compile_wait_s > 0);   // by the task of its own, once nothing else was left
    CHECK(object_count(w.store) == members + 21);
}

namespace {

// The builder's side: `wheel` stored and compiled, its list published, and the layer of that
// list (or of `forged`, when given, a changed copy of it) written under its digest's name in
// `dir`, as pull leaves it in cache/downloads.
struct Sent {
    fs::path layer;
    store::WheelBytecode list;
};
Sent send_layer(World& w, const fs::path& wheel, const fs::path& dir,
                void (*forge)(store::WheelBytecode&) = nullptr) {
    BytecodeTasks tasks(w.store, w.in, 2, w.progress);
    store::Ingest ingest = w.ingest(wheel);
    tasks.expect(w.item, ingest.file_count());
    ingest_and_compile(ingest, tasks, w.item, 2);
    w.item.wheel = ingest.finish();
    store_bytecode(tasks, w.item, 2);
    store::WheelBytecode list = *w.item.bytecode[0].list;
    w.store.publish({&*w.item.wheel}, {&list});
    if (forge) forge(list);
    const fs::path tmp = dir / "layer.tmp";
    const store::BytecodeLayer l = store::write_bytecode_layer(w.store, list, tmp);
    const fs::path layer = dir / (l.sha256 + ".pyc-layer");
    fs::rename(tmp, layer);
    return {layer, list};
}

// The node's item for the same wheel, its layer received.
Item received_item(const World& w, const fs::path& layer) {
    Item item;
    item.sha256 = w.item.sha256;
    item.filename = w.item.filename;
    item.bytecode.push_back({w.item.bytecode[0].key, std::nullopt, false, false, layer});
    return item;
}

}  // namespace

TEST_CASE(
    "LayerAdoption: a layer's .pyc files are stored before its wheel is, its list set "
    "once the wheel is, and its file removed",
    "[install][bytecode]") {
    envboxtest::TempDir dir("envbox-adopt");
    const fs::path wheel = write_wheel(dir.path);
    World w(wheel);
    const Sent sent = send_layer(w, wheel, dir.path);
    store::Store node(dir.path / "node");
    Item item = received_item(w, sent.layer);
    const Stopwatch clock;
    LayerAdoption adoption(node, item, 0, clock);
    auto store_wheel = [&] {
        store::Ingest ingest(node, wheel, item.sha256, item.filename, true);
        run_ingest(ingest);
        item.wheel = ingest.finish();
    };
    SECTION("the layer first, while the wheel is not stored") {
        {
            TaskPool pool(2);
            adoption.arrived(pool);
            pool.run();
        }
        CHECK(object_count(node) == sent.list.files.size());  // its .pyc, nothing else
        CHECK_FALSE(item.bytecode[0].list);
        CHECK(fs::exists(sent.layer));
        store_wheel();
        TaskPool pool(2);
        adoption.wheel_stored(pool);
        pool.run();
    }
    SECTION("the wheel first") {
        store_wheel();
        TaskPool pool(2);
        adoption.wheel_stored(pool);
        adoption.arrived(pool);
        pool.run();
    }
    REQUIRE(item.bytecode[0].list);
    store::WheelBytecode got = *item.bytecode[0].list;
    CHECK(got.received);
    got.received = false;
    CHECK(store::serialise_bytecode(got) == store::serialise_bytecode(sent.list));
    CHECK(item.bytecode[0].adopted_at > 0);
    CHECK_FALSE(fs::exists(sent.layer));  // closed and removed once adopted
    CHECK_FALSE(node.damaged_objects(*item.bytecode[0].list, true));
}

TEST_CASE("LayerAdoption: a layer whose list names a source the wheel does not have gets no list",
          "[install][bytecode]") {
    envboxtest::TempDir dir("envbox-adopt");
    const fs::path wheel = write_wheel(dir.path);
    World w(wheel);
    // A list that claims demo/core.py was another source: every .pyc still its digest.
    const Sent sent = send_layer(w, wheel, dir.path, [](store::WheelBytecode& l) {
        for (auto& f : l.files)
            if (f.source == "demo/core.py") f.source_digest = std::string(64, 'a');
    });
    store::Store node(dir.path / "node");
    Item item = received_item(w, sent.layer);
    store::Ingest ingest(node, wheel, item.sha256, item.filename, true);
    run_ingest(ingest);
    item.wheel = ingest.finish();
    const Stopwatch clock;
    LayerAdoption adoption(node, item, 0, clock);
    TaskPool pool(2);
    adoption.arrived(pool);
    adoption.wheel_stored(pool);
    CHECK_THROWS_WITH(pool.run(), Catch::Contains("names demo/core.py, not a module of the wheel"));
    CHECK_FALSE(item.bytecode[0].list);
}
