// The store's lifecycle in-process: ingest of wheels written here (and of Debian's real ones),
// publish, the check that finds a touched object, and the sweep, dry run against real.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"
#include "stored_zip.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {

struct TempHome : envboxtest::TempDir {
    TempHome() : envboxtest::TempDir("envbox-store") {}
};

using Member = envboxtest::ZipMember;

// A zip of stored (uncompressed) members made on Unix, as a wheel tool writes them.
std::string zip_of(const std::vector<Member>& members) {
    return envboxtest::stored_zip(members);
}

// A wheel of project `name` 1.0 with `files` (archive path, content, executable) beside its
// METADATA, WHEEL and a RECORD that lists them all; `damage_record` lists one wrong hash.
fs::path write_wheel(const fs::path& dir, const std::string& name, std::vector<Member> files,
                     bool damage_record = false) {
    const std::string dist_info = name + "-1.0.dist-info";
    files.push_back(
        {dist_info + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n"});
    files.push_back({dist_info + "/WHEEL",
                     "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: "
                     "py3-none-any\n"});
    std::string record;
    for (const auto& f : files) {
        std::string digest = to_record_b64(sha256(damage_record ? f.content + "!" : f.content));
        record += f.name + ",sha256=" + digest + "," + std::to_string(f.content.size()) + "\n";
    }
    record += dist_info + "/RECORD,,\n";
    files.push_back({dist_info + "/RECORD", record});
    fs::path path = dir / (name + "-1.0-py3-none-any.whl");
    std::ofstream(path, std::ios::binary) << zip_of(files);
    return path;
}

store::WheelFiles ingest(const store::Store& store, const fs::path& wheel,
                         store::IngestStats* stats = nullptr) {
    store::Ingest in(store, wheel, to_hex(sha256_file(wheel)), wheel.filename().string(), true,
                     fs::file_size(wheel));
    for (std::size_t t = 0; t < in.task_count(); ++t)
        in.run_task(t);
    return in.finish(stats);
}

std::size_t entries(const fs::path& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::recursive_directory_iterator(dir))
        if (!e.is_directory()) ++n;
    return n;
}

const std::vector<Member> kDemoFiles = {
    {"demo/__init__.py", "VALUE = 1\n"},
    {"demo/tool.sh", "#!/bin/sh\necho demo\n", true},
    {"demo/LICENSE", "shared licence text\n"},
};

}  // namespace

TEST_CASE("ingest stores each member once as a read-only object and reads the wheel's identity",
          "[store]") {
    TempHome home;
    store::Store store(home.path);
    fs::path wheel = write_wheel(home.path, "demo", kDemoFiles);
    store::IngestStats stats;
    store::WheelFiles w = ingest(store, wheel, &stats);
    CHECK(w.name == "demo");
    CHECK(w.version == "1.0");
    CHECK(w.dist_info == "demo-1.0.dist-info");
    CHECK(w.root_is_purelib);
    REQUIRE(w.files.size() == 6);
    CHECK(stats.new_objects == 6);
    CHECK(stats.archive_bytes == fs::file_size(wheel));
    const store::WheelFile* tool = w.find("demo/tool.sh");
    REQUIRE(tool);
    CHECK(tool->executable);
    CHECK(tool->digest == to_hex(sha256("#!/bin/sh\necho demo\n")));
    for (const auto& f : w.files) {
        struct stat st {};
        REQUIRE(::stat(store.object_path(f.digest, f.executable).c_str(), &st) == 0);
        CHECK(!store::object_touched(st, f.size, f.executable));
    }
    // Nothing staged is left behind, and a second ingest finds every object stored.
    CHECK(fs::is_empty(store.tmp_dir()));
    store::IngestStats again;
    ingest(store, wheel, &again);
    CHECK(again.new_objects == 0);
    CHECK(entries(store.layout().objects()) == 6);
}

TEST_CASE("ingest refuses a wheel whose RECORD disagrees and stores nothing", "[store]") {
    TempHome home;
    store::Store store(home.path);
    fs::path wheel = write_wheel(home.path, "demo", kDemoFiles, /*damage_record=*/true);
    try {
        ingest(store, wheel);
        FAIL("ingest accepted a wrong RECORD");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::integrity);
    }
    CHECK(entries(store.layout().objects()) == 0);
    CHECK(fs::is_empty(store.tmp_dir()));
}

TEST_CASE("ingested_members: each member where its bytes are whole, before the wheel is checked",
          "[store]") {
    TempHome home;
    store::Store store(home.path);
    // demo/LICENSE is stored already (by `other`); demo/copy.txt repeats demo/tool.sh's bytes.
    ingest(store, write_wheel(home.path, "other", {{"other/LICENSE", "shared licence text\n"}}));
    std::vector<Member> files = kDemoFiles;
    files.push_back({"demo/copy.txt", "#!/bin/sh\necho demo\n", true});
    const fs::path wheel = write_wheel(home.path, "demo", files);
    store::Ingest in(store, wheel, to_hex(sha256_file(wheel)), wheel.filename().string(), true);
    REQUIRE(in.file_count() == 7);
    REQUIRE(in.task_count() == 2);  // the members, and the archive's digest
    CHECK(in.task_files(0).size() == 7);
    CHECK(in.task_files(0).front().path == "demo/__init__.py");
    CHECK(in.task_files(1).empty());
    std::vector<store::IngestedMember> all;
    for (std::size_t t = 0; t < in.task_count(); ++t) {
        in.run_task(t);
        for (auto& m : in.ingested_members(t))
            all.push_back(std::move(m));
    }
    // One task of small members, one for the archive's digest: six members listed, the copy
    // (whose object the tool's staging wrote) left out.
    REQUIRE(all.size() == 6);
    std::map<std::string, store::IngestedMember> by_path;
    for (const auto& m : all)
        by_path.emplace(m.file.path, m);
    CHECK_FALSE(by_path.count("demo/copy.txt"));
    const auto& licence = by_path.at("demo/LICENSE");
    CHECK(licence.staged.empty());  // the store's object already
    CHECK(read_file(store.object_path(licence.file.digest, false)) == "shared licence text\n");
    const auto& init = by_path.at("demo/__init__.py");
    REQUIRE_FALSE(init.staged.empty());
    CHECK(read_file(init.staged) == "VALUE = 1\n");
    CHECK_FALSE(fs::exists(store.object_path(init.file.digest, false)));  // not before finish
    store::WheelFiles w = in.finish();
    CHECK(w.files.at(init.index).path == "demo/__init__.py");
    CHECK_FALSE(fs::exists(init.staged));  // moved where the object goes
    CHECK(read_file(store.object_path(init.file.digest, false)) == "VALUE = 1\n");
}

TEST_CASE("ingest of Debian's real wheels", "[store]") {
    const fs::path dir = "/usr/share/python-wheels";
    std::vector<fs::path> wheels;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".whl") wheels.push_back(e.path());
    if (wheels.empty()) {
        WARN("no wheels in " << dir << "; skipped");
        return;
    }
    TempHome home;
    store::Store store(home.path);
    for (const auto& path : wheels) {
        INFO(path);
        store::WheelFiles w = ingest(store, path);
        CHECK(path.filename().string().starts_with(w.name + "-" + w.version + "-"));
        CHECK(w.find(w.dist_info + "/RECORD"));
        store.publish({&w});
        auto loaded = store.load_wheel(w.wheel_sha256);
        REQUIRE(loaded);
        CHECK(loaded->files.size() == w.files.size());
        CHECK(!store.damaged_objects(*loaded, /*hash=*/true));
    }
}

TEST_CASE("publish is idempotent", "[store]") {
    TempHome home;
    store::Store store(home.path);
    store::WheelFiles w = ingest(store, write_wheel(home.path, "demo", kDemoFiles));
    CHECK(!store.load_wheel(w.wheel_sha256));  // ingest alone publishes nothing
    store.publish({});
    store.publish({&w});
    const fs::path list = store.layout().wheels() / w.wheel_sha256 / "files";
    const std::string first = read_file(list);
    store.publish({&w, &w});
    CHECK(read_file(list) == first);
    CHECK((fs::status(list).permissions() & fs::perms::all) == fs::perms(0444));
    auto loaded = store.load_wheel(w.wheel_sha256);
    REQUIRE(loaded);
    CHECK(loaded->name == w.name);
    REQUIRE(loaded->files.size() == w.files.size());
    for (std::size_t i = 0; i < w.files.size(); ++i) {
        CHECK(loaded->files[i].path == w.files[i].path);
        CHECK(loaded->files[i].digest == w.files[i].digest);
        CHECK(loaded->files[i].executable == w.files[i].executable);
    }
}

TEST_CASE("damaged_objects finds a touched, a missing and a rewritten object", "[store]") {
    TempHome home;
    store::Store store(home.path);
    store::WheelFiles w = ingest(store, write_wheel(home.path, "demo", kDemoFiles));
    CHECK(!store.damaged_objects(w, /*hash=*/true));
    const store::WheelFile& init = *w.find("demo/__init__.py");
    const fs::path object = store.object_path(init.digest, false);

    SECTION("a chmod") {
        REQUIRE(::chmod(object.c_str(), 0644) == 0);
        auto damage = store.damaged_objects(w, false);
        REQUIRE(damage);
        CHECK(damage->digests == std::set<std::string>{init.digest});
        CHECK(damage->first == object.string() + " (demo/__init__.py): mode 0644, expected 0444");
    }
    SECTION("a write through a link") {
        REQUIRE(::chmod(object.c_str(), 0644) == 0);
        std::ofstream(object, std::ios::app) << "# appended\n";
        REQUIRE(::chmod(object.c_str(), 0444) == 0);
        auto damage = store.damaged_objects(w, false);
        REQUIRE(damage);
        CHECK(damage->digests == std::set<std::string>{init.digest});
        CHECK(damage->first.find("size ") != std::string::npos);
    }
    SECTION("gone") {
        fs::remove(object);
        auto damage = store.damaged_objects(w, false);
        REQUIRE(damage);
        CHECK(damage->first == object.string() + " (demo/__init__.py): " + std::strerror(ENOENT));
    }
    SECTION("same size, mode and mtime: only hashing finds it") {
        REQUIRE(::chmod(object.c_str(), 0644) == 0);
        std::ofstream(object, std::ios::binary | std::ios::trunc) << "VALUE = 2\n";
        const struct timespec times[2] = {{store::kObjectMtime, 0}, {store::kObjectMtime, 0}};
        REQUIRE(::utimensat(AT_FDCWD, object.c_str(), times, 0) == 0);
        REQUIRE(::chmod(object.c_str(), 0444) == 0);
        CHECK(!store.damaged_objects(w, false));
        auto damage = store.damaged_objects(w, true);
        REQUIRE(damage);
        CHECK(damage->first ==
              object.string() + " (demo/__init__.py): content differs from its name");
    }
    // Ingesting the wheel again, asked to replace them, repairs what was found.
    auto damage = store.damaged_objects(w, true);
    REQUIRE(damage);
    const fs::path wheel = home.path / "demo-1.0-py3-none-any.whl";
    store::Ingest again(store, wheel, w.wheel_sha256, wheel.filename().string(), true);
    again.replace_objects(damage->digests);
    for (std::size_t t = 0; t < again.task_count(); ++t)
        again.run_task(t);
    store::IngestStats stats;
    again.finish(&stats);
    CHECK(stats.new_objects == 1);
    CHECK(!store.damaged_objects(w, true));
}

TEST_CASE("sweep: a dry run counts exactly what a real one removes", "[store]") {
    TempHome home;
    store::Store store(home.path);
    // Both wheels hold demo/LICENSE's content; only `other` holds the rest of its objects.
    store::WheelFiles kept = ingest(store, write_wheel(home.path, "demo", kDemoFiles));
    store::WheelFiles other =
        ingest(store, write_wheel(home.path, "other",
                                  {{"other/__init__.py", "OTHER = 1\n"},
                                   {"other/LICENSE", "shared licence text\n"}}));
    store.publish({&kept, &other});
    write_file_atomic(store.tmp_dir() / "ingest-left-by-a-crash", "x");
    const std::set<std::string> live = {kept.wheel_sha256};

    // The objects only `other` holds (its WHEEL is the same text as demo's).
    std::set<std::string> kept_objects;
    for (const auto& f : kept.files)
        kept_objects.insert(store.object_relpath(f.digest, f.executable));
    std::uint64_t other_only_bytes = 0;
    std::size_t other_only = 0;
    for (const auto& f : other.files)
        if (!kept_objects.count(store.object_relpath(f.digest, f.executable))) {
            ++other_only;
            other_only_bytes += f.size;
        }
    REQUIRE(other_only == 3);  // __init__.py, METADATA, RECORD

    const std::size_t objects_before = entries(store.layout().objects());
    store::SweepOptions dry_run;
    dry_run.dry_run = true;
    store::SweepResult dry = store.sweep(live, dry_run);
    CHECK(dry.wheels_removed == 1);
    CHECK(dry.objects_removed == other_only);
    CHECK(dry.bytes_freed == other_only_bytes);
    CHECK(dry.temporary_removed == 1);
    CHECK(entries(store.layout().objects()) == objects_before);
    CHECK(store.load_wheel(other.wheel_sha256));
    CHECK(!fs::is_empty(store.tmp_dir()));

    store::SweepResult real = store.sweep(live);
    CHECK(real.wheels_removed == dry.wheels_removed);
    CHECK(real.objects_removed == dry.objects_removed);
    CHECK(real.bytes_freed == dry.bytes_freed);
    CHECK(real.temporary_removed == dry.temporary_removed);
    CHECK(entries(store.layout().objects()) == objects_before - other_only);
    CHECK(!store.load_wheel(other.wheel_sha256));
    CHECK(fs::is_empty(store.tmp_dir()));
    CHECK(!store.damaged_objects(kept, true));

    store::SweepResult nothing = store.sweep(live);
    CHECK(nothing.wheels_removed == 0);
    CHECK(nothing.objects_removed == 0);
    CHECK(nothing.temporary_removed == 0);
    CHECK(nothing.bytes_freed == 0);
}

TEST_CASE("sweep refuses to go on from a live wheel's damaged file list", "[store]") {
    TempHome home;
    store::Store store(home.path);
    store::WheelFiles w = ingest(store, write_wheel(home.path, "demo", kDemoFiles));
    store.publish({&w});
    const fs::path list = store.layout().wheels() / w.wheel_sha256 / "files";
    fs::remove(list);
    write_file_atomic(list, "envbox-wheel-files 1\ngarbage\n");
    const std::size_t objects_before = entries(store.layout().objects());
    try {
        store.sweep({w.wheel_sha256});
        FAIL("sweep went on");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::integrity);
    }
    CHECK(entries(store.layout().objects()) == objects_before);
}

TEST_CASE("check: the whole store, every list and object, each problem named", "[store]") {
    TempHome home;
    store::Store store(home.path);
    store::WheelFiles w = ingest(store, write_wheel(home.path, "demo", kDemoFiles));
    store.publish({&w});
    store::CheckResult clean = store.check(/*hash=*/true, 2);
    CHECK(clean.clean());
    CHECK(clean.wheels == 1);
    CHECK(clean.objects > 0);
    CHECK(clean.hashed == clean.objects);
    const store::WheelFile& init = *w.find("demo/__init__.py");
    const fs::path object = store.object_path(init.digest, false);

    SECTION("a same-size rewrite is found by hashing only") {
        REQUIRE(::chmod(object.c_str(), 0644) == 0);
        std::ofstream(object, std::ios::binary | std::ios::trunc) << "VALUE = 2\n";
        const struct timespec times[2] = {{store::kObjectMtime, 0}, {store::kObjectMtime, 0}};
        REQUIRE(::utimensat(AT_FDCWD, object.c_str(), times, 0) == 0);
        REQUIRE(::chmod(object.c_str(), 0444) == 0);
        CHECK(store.check(false, 2).clean());
        store::CheckResult r = store.check(true, 2);
        REQUIRE(r.problems.size() == 1);
        CHECK(r.problems[0] == "object " + object.string() +
                                   " (demo/__init__.py of demo-1.0-py3-none-any.whl): content "
                                   "differs from its name");
    }
    SECTION("a removed object and a damaged file list") {
        fs::remove(object);
        const fs::path list = store.layout().wheels() / w.wheel_sha256 / "files";
        std::string text = read_file(list);
        ::chmod(list.c_str(), 0644);
        std::ofstream(list, std::ios::binary | std::ios::trunc) << text.substr(0, 30);
        store::CheckResult r = store.check(false, 2);
        REQUIRE(r.problems.size() == 1);  // the list does not read, so its objects are unknown
        CHECK(r.problems[0].starts_with("wheel " + w.wheel_sha256 + ": "));
        CHECK(r.wheels == 0);
    }
    SECTION("objects no list names are not damage") {
        fs::create_directories(store.layout().objects() / "ab");
        std::ofstream(store.layout().objects() / "ab" / std::string(62, 'c')) << "stray";
        REQUIRE(fs::exists(store.layout().objects() / "ab" / std::string(62, 'c')));
        CHECK(store.check(true, 2).clean());
    }
}
