// One install transaction (src/install/transaction.cpp) against the real interpreter, a real
// store and a real wheel: the lock's own file made into a generation, nothing fetched twice, and
// a received artifact as the only source (a wheel it did not carry refused, naming the package,
// whatever the lock's path says).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "envbox/index/fetch.hpp"
#include "envbox/install/generation.hpp"
#include "envbox/install/transaction.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/sha256.hpp"
#include "stored_zip.hpp"
#include "temp_dir.hpp"

using namespace envbox;
using namespace envbox::install;
namespace fs = std::filesystem;

namespace {

// demo 1.0, one module, as a wheel tool writes it.
fs::path demo_wheel(const fs::path& dir) {
    std::vector<envboxtest::ZipMember> files = {
        {"demo/__init__.py", "ANSWER = 42\n"},
        {"demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"},
        {"demo-1.0.dist-info/WHEEL",
         "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}};
    std::string record;
    for (const auto& f : files)
        record += f.name + ",sha256=" + to_record_b64(sha256(f.content)) + "," +
                  std::to_string(f.content.size()) + "\n";
    files.push_back({"demo-1.0.dist-info/RECORD", record + "demo-1.0.dist-info/RECORD,,\n"});
    fs::create_directories(dir);
    const fs::path path = dir / "demo-1.0-py3-none-any.whl";
    std::ofstream(path, std::ios::binary) << envboxtest::stored_zip(files);
    return path;
}

struct TransactionWorld {
    envboxtest::TempDir tmp{"envbox-transaction"};
    fs::path home = tmp.path / "home";
    store::Store store{home};
    Target target = target_of_interpreter(
        env::probe_interpreter("/usr/bin/python3", tmp.path / "probe"), "", "e");
    Progress progress;
    fs::path wheel = demo_wheel(tmp.path / "wheels");
    std::string sha = to_hex(sha256_file(wheel));

    // A lock in PROJECT/manifests naming the wheel at `path`.
    lock::LockFile lock(const std::string& path) const {
        const fs::path at = tmp.path / "project" / "manifests" / "pylock.e.toml";
        auto parsed = lock::parse_lock_file(
            at,
            "lock-version = \"1.0\"\ncreated-by = \"test\"\n\n[[packages]]\nname = \"demo\"\n"
            "version = \"1.0\"\n\n[[packages.wheels]]\nname = \"demo-1.0-py3-none-any.whl\"\n"
            "path = \"" +
                path + "\"\nhashes = { sha256 = \"" + sha + "\" }\n");
        if (!parsed) FAIL(parsed.error().what());
        return std::move(*parsed);
    }
    TransactionOptions options(const Received* received = nullptr) {
        TransactionOptions o;
        o.site.home = home;
        o.site.progress = &progress;
        o.manifests = tmp.path / "project" / "manifests";
        o.offline = true;
        o.received = received;
        return o;
    }
};

}  // namespace

TEST_CASE("Transaction: the lock's own wheel made into a generation, and not fetched again",
          "[install][transaction]") {
    TransactionWorld w;
    const lock::LockFile lock = w.lock(w.wheel.string());
    Transaction t(lock, w.target, w.options());
    REQUIRE(t.items().size() == 1);
    CHECK(t.items()[0].sha256 == w.sha);
    CHECK(t.local_inputs().empty());  // no folder or git commit
    const FetchReport fetched = t.fetch(w.store);
    CHECK(fetched.fetched == 1);
    const fs::path edir = w.home / "envs" / "e";
    fs::create_directories(edir);
    env::Generation gen =
        next_generation(edir, "e", std::string(64, 'd'), lock.path, w.target, LinkMode::hardlink);
    t.execute(w.store, gen, edir, nullptr, {"e", lock.text, LinkMode::hardlink, 1});
    const auto current = env::current_generation(edir);
    REQUIRE(current);
    CHECK(current->number == 1);
    bool found = false;
    for (const auto& e : fs::recursive_directory_iterator(current->path))
        found = found || (e.path().filename() == "__init__.py" &&
                          e.path().parent_path().filename() == "demo");
    CHECK(found);

    Transaction again(lock, w.target, w.options());
    CHECK(again.fetch(w.store).fetched == 0);  // the store has it
}

TEST_CASE("Transaction: a received artifact is the only source", "[install][transaction]") {
    TransactionWorld w;
    // The lock names the wheel where it is on this machine; a received transaction never reads it.
    const lock::LockFile lock = w.lock(w.wheel.string());
    Received nothing;
    Transaction refused(lock, w.target, w.options(&nothing));
    try {
        refused.fetch(w.store);
        FAIL("a wheel the artifact did not carry was installed");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::integrity);
        CHECK_THAT(e.what(), Catch::Contains("demo 1.0") &&
                                 Catch::Contains("the received artifact does not carry"));
    }

    // Carried: taken from downloads/, though the lock's path no longer exists.
    Received carried;
    carried.wheels.insert(w.sha);
    const fs::path downloads = w.home / "cache" / "downloads";
    fs::create_directories(downloads);
    fs::copy_file(w.wheel, index::download_path(downloads, w.sha));
    fs::remove(w.wheel);
    Transaction taken(lock, w.target, w.options(&carried));
    CHECK(taken.fetch(w.store).fetched == 1);
}
