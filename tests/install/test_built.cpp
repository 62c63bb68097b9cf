// install::find_built_wheel / store_built_wheel: a wheel built from an sdist, kept in the store
// under a key of every input of its build; any change to an input is another key, and nothing
// else is.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "build_fixtures.hpp"
#include "envbox/install/built.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/own_tree.hpp"
#include "temp_dir.hpp"

using namespace envbox;
using envboxtest::TempDir;
namespace fs = std::filesystem;

namespace {

install::BuildKey key_of_demo() {
    install::BuildKey k;
    k.sdist_sha256 = std::string(64, 'a');
    k.build_env = std::string(64, 'b');
    k.python = "cpython 3.11.2";
    k.platform = "manylinux_2_28_x86_64";
    k.backend = "setuptools.build_meta:__legacy__";
    k.variables = {{"TORCH_CUDA_ARCH_LIST", "9.0"}};
    k.runtime = {"torch 2.11.0+cu128 " + std::string(64, 'c'),
                 "numpy 2.3.0 " + std::string(64, 'd')};
    k.toolchain = {"gcc 12.2.0"};
    return k;
}

}  // namespace

TEST_CASE("built wheels: stored once under their key, found again, every input in the key",
          "[install][built]") {
    TempDir home;
    store::Store store(home.path);
    const install::BuildKey key = key_of_demo();
    CHECK_FALSE(install::find_built_wheel(store, key));
    const fs::path sdist =
        envboxtest::make_sdist(home.path, "demo-1.0",
                               {{"setup.py",
                                 "from setuptools import setup\n"
                                 "setup(name='demo', version='1.0', py_modules=['demo'])\n"},
                                {"demo.py", "ANSWER = 42\n"}});
    const install::BuiltWheel built = install::build_wheel(envboxtest::request(home, sdist));
    const install::BuiltRecord stored = install::store_built_wheel(store, key, built.wheel);
    CHECK(stored.filename == "demo-1.0-py3-none-any.whl");
    REQUIRE(store.load_wheel(stored.wheel_sha256));
    CHECK(store.kept_archive(stored.wheel_sha256, fs::file_size(built.wheel)));

    auto found = install::find_built_wheel(store, key);
    REQUIRE(found);
    CHECK(found->wheel_sha256 == stored.wheel_sha256);
    CHECK(found->filename == stored.filename);
    CHECK(found->key_text == key.text());

    install::BuildKey same = key;  // the order lists are given in does not matter
    std::swap(same.runtime[0], same.runtime[1]);
    CHECK(same.digest() == key.digest());

    // Each input alone makes another key.
    std::vector<install::BuildKey> others(9, key);
    others[0].sdist_sha256[0] = 'f';
    others[1].build_env[0] = 'f';
    others[2].python = "cpython 3.12.8";
    others[3].platform = "manylinux_2_28_aarch64";
    others[4].backend = "setuptools.build_meta";
    others[5].config_settings = {{"--build-option", "--cpp_ext"}};
    others[6].variables["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0";
    others[7].runtime[0] = "torch 2.11.0+cu130 " + std::string(64, 'c');
    others[8].toolchain = {"gcc 13.1.0"};
    for (const auto& other : others) {
        INFO(other.text());
        CHECK(other.digest() != key.digest());
        CHECK_FALSE(install::find_built_wheel(store, other));
    }
    // gc: a record stays with its wheel, and goes with it.
    const fs::path record = store.layout().builds() / key.digest();
    CHECK(store.sweep({stored.wheel_sha256}).builds_removed == 0);
    CHECK(fs::exists(record));
    CHECK(store.sweep({}).builds_removed == 1);
    CHECK_FALSE(fs::exists(record));
    CHECK_FALSE(install::find_built_wheel(store, key));

    // A value cannot spill into another field: a blank or a line break is encoded.
    install::BuildKey spill = key;
    spill.python = "cpython 3.11.2\nplatform x";
    CHECK(spill.text().find("\nplatform x") == std::string::npos);
}

TEST_CASE("built wheels: a tampered, planted or orphaned record", "[install][built]") {
    TempDir home;
    store::Store store(home.path);
    const install::BuildKey key = key_of_demo();
    const fs::path sdist = envboxtest::make_sdist(
        home.path, "demo-1.0",
        {{"setup.py", "from setuptools import setup\nsetup(name='demo', version='1.0')\n"}});
    const install::BuiltWheel built = install::build_wheel(envboxtest::request(home, sdist));
    const install::BuiltRecord stored = install::store_built_wheel(store, key, built.wheel);
    const fs::path record = store.layout().builds() / key.digest();
    const std::string text = read_file(record);

    fs::permissions(record, fs::perms::owner_write, fs::perm_options::add);
    write_file_atomic(record, text.substr(0, text.find("python")) + "python cpython%203.12.8\n",
                      0644, Durability::none);
    CHECK_THROWS_WITH(install::find_built_wheel(store, key),
                      Catch::Contains("its key is not the key it is named after"));

    fs::remove(record);
    fs::create_symlink(home.path / "elsewhere", record);
    write_file_atomic(home.path / "elsewhere", text, 0644, Durability::none);
    CHECK_THROWS_WITH(install::find_built_wheel(store, key), Catch::Contains("link"));

    fs::remove(record);
    write_file_atomic(record, text, 0444, Durability::none);
    REQUIRE(install::find_built_wheel(store, key));
    // The wheel collected since: the record no longer finds it, and the build runs again.
    remove_own_tree(store.root(), store.layout().wheels() / stored.wheel_sha256);
    CHECK_FALSE(install::find_built_wheel(store, key));
}

TEST_CASE("built wheels: what an artifact carries, found by wheel and checked as a key",
          "[install][built]") {
    TempDir home;
    store::Store store(home.path);
    install::BuildKey key = key_of_demo();
    key.backend = "";  // a value may be empty: `backend` is written so when the sdist implies it
    const fs::path sdist = envboxtest::make_sdist(
        home.path, "demo-1.0",
        {{"setup.py", "from setuptools import setup\nsetup(name='demo', version='1.0')\n"}});
    const install::BuiltWheel built = install::build_wheel(envboxtest::request(home, sdist));
    const install::BuiltRecord stored = install::store_built_wheel(store, key, built.wheel);

    CHECK(install::is_build_key_text(key.text(), key.sdist_sha256));
    CHECK_FALSE(install::is_build_key_text(key.text(), std::string(64, 'e')));  // another sdist
    const std::string text = key.text();
    for (const std::string& hostile :
         {std::string("envbox-build-key 2\n") + text.substr(text.find('\n') + 1),
          text + "sdist " + key.sdist_sha256 + "\n",                // a second sdist line
          text + "unknown x\n",                                     // a field envbox never writes
          text + "python a\tb\n",                                   // a control character
          text + "python %zz\n",                                    // not percent-encoded
          text.substr(0, text.size() - 1),                          // no final line break
          text + "toolchain " + std::string(70000, 'x') + "\n"}) {  // over 64 KiB
        INFO(hostile.substr(0, 60));
        CHECK_FALSE(install::is_build_key_text(hostile, key.sdist_sha256));
    }

    const auto records = install::built_records(store);
    auto found = install::built_record_of(records, stored.wheel_sha256, key.sdist_sha256);
    REQUIRE(found);
    CHECK(found->key_text == key.text());
    CHECK_FALSE(install::built_record_of(records, stored.wheel_sha256, std::string(64, 'e')));
    CHECK_FALSE(install::built_record_of(records, std::string(64, 'f'), key.sdist_sha256));

    // A node records what it received under the digest of the key it came with, once.
    TempDir node;
    store::Store node_store(node.path);
    store::Ingest ingest(node_store, built.wheel, stored.wheel_sha256, stored.filename, false);
    for (std::size_t t = 0; t < ingest.task_count(); ++t)
        ingest.run_task(t);
    const store::WheelFiles files = ingest.finish();
    node_store.publish({&files});
    install::record_received_build(node_store, stored);
    install::record_received_build(node_store, stored);
    CHECK(install::built_records(node_store).size() == 1);
    // Kept for what it came with (its provenance, sent on by push and pack), but it decides
    // nothing a local create installs: that builds for itself.
    const auto received = node_store.load_build(key.digest());
    REQUIRE(received);
    CHECK_FALSE(received->local);
    CHECK(received->provenance == key.text());
    CHECK_FALSE(install::find_built_wheel(node_store, key));
    // This machine's own record is found; the same record written by someone else (another
    // owner, or writable by others: a planted file in a shared home) is not.
    REQUIRE(install::find_built_wheel(store, key));
    const fs::path mine = store.layout().builds() / key.digest();
    REQUIRE(::chmod(mine.c_str(), 0666) == 0);
    CHECK_FALSE(install::find_built_wheel(store, key));
    REQUIRE(::chmod(mine.c_str(), 0444) == 0);
    REQUIRE(install::find_built_wheel(store, key));
    if (::geteuid() == 0) {
        REQUIRE(::chown(mine.c_str(), 65534, 65534) == 0);
        CHECK_FALSE(install::find_built_wheel(store, key));
    }
}
