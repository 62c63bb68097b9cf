// The steps of `ops::create` that run in-process without a network or an interpreter
// (src/ops/create_steps.hpp): selection, fetch requests, the generation digest, the next
// generation's number, the re-lock decision and the project's .envbox link.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "../../src/ops/create_steps.hpp"
#include "envbox/install/bytecode.hpp"
#include "envbox/install/fetch.hpp"
#include "envbox/install/generation.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "temp_dir.hpp"

using namespace envbox;
using namespace envbox::ops::create_steps;
using envbox::ops::Freshness;
using envbox::ops::freshness;
using namespace envbox::install;
namespace fs = std::filesystem;

namespace {

struct TempDir : envboxtest::TempDir {
    TempDir() : envboxtest::TempDir("envbox-create") {}
};

const std::string kA(64, 'a'), kB(64, 'b'), kC(64, 'c');

std::string package(const std::string& name, const std::string& table, const std::string& file,
                    const std::string& sha, const std::string& extra = "") {
    return "[[packages]]\nname = \"" + name + "\"\nversion = \"1.0\"\n" + extra + "\n" + table +
           "\n" + file + "\nhashes = { sha256 = \"" + sha + "\" }\n\n";
}

lock::Pylock parse_lock(const std::string& packages) {
    auto p = lock::Pylock::parse("lock-version = \"1.0\"\ncreated-by = \"test\"\n\n" + packages,
                                 "/p/manifests/pylock.e.toml");
    if (!p) FAIL(p.error().what());
    return std::move(*p);
}

install::Target target() {
    auto m = lock::Manifest::parse(
        "[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = "
        "[]\n",
        "m.toml");
    REQUIRE(m.ok());
    install::Target t = install::target_of_manifest(*m);
    env::Interpreter i;
    i.executable = "/usr/bin/python3.12";
    i.major = 3;
    i.minor = 12;
    i.full_version = "3.12.8";
    t.interpreter = i;
    return t;
}

}  // namespace

TEST_CASE("select_items: one wheel per package, a wheel archive as a direct URL", "[ops][create]") {
    lock::Pylock lock = parse_lock(
        package("demo", "[[packages.wheels]]", "url = \"https://x.test/demo-1.0-py3-none-any.whl\"",
                kA, "index = \"https://x.test/simple/\"") +
        package("direct", "[packages.archive]",
                "url = \"https://u:p@x.test/direct-1.0-py3-none-any.whl\"", kB));
    std::vector<Item> items = select_items(lock, target(), "/p/manifests/pylock.e.toml");
    REQUIRE(items.size() == 2);
    CHECK(items[0].package->name == "demo");
    CHECK(items[0].filename == "demo-1.0-py3-none-any.whl");
    CHECK(items[0].sha256 == kA);
    CHECK_FALSE(items[0].direct);
    CHECK(items[1].direct);
    CHECK(items[1].sha256 == kB);
    // PEP 610's record of the archive carries no credentials.
    CHECK(direct_url_json(items[1]) ==
          "{\"archive_info\": {\"hash\": \"sha256=" + kB + "\", \"hashes\": {\"sha256\": \"" + kB +
              "\"}}, \"url\": \"https://x.test/direct-1.0-py3-none-any.whl\"}");
    CHECK(items_cuda_lines(items).empty());
}

TEST_CASE("select_items: anything but a wheel is refused with the lock's line", "[ops][create]") {
    struct Row {
        std::string doc, expect;
    };
    const Row rows[] = {
        {package("src", "[packages.sdist]", "url = \"https://x.test/src-1.0.tar.gz\"", kA),
         "/p/manifests/pylock.e.toml:4: src 1.0 offers only an sdist for CPython 3.12 on "
         "manylinux_2_28_x86_64; envbox installs wheels only"},
        {package("tgz", "[packages.archive]", "url = \"https://x.test/tgz-1.0.tar.gz\"", kA),
         "/p/manifests/pylock.e.toml:4: tgz 1.0 offers a non-wheel archive for CPython 3.12 on "
         "manylinux_2_28_x86_64; envbox installs wheels only"},
    };
    for (const auto& r : rows) {
        INFO(r.doc);
        lock::Pylock lock = parse_lock(r.doc);
        try {
            select_items(lock, target(), "/p/manifests/pylock.e.toml");
            FAIL("accepted");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::invalid_input);
            CHECK(std::string(e.what()).find(r.expect) != std::string::npos);
        }
    }
}

TEST_CASE("artifact_request: the package's index gives CA and credentials", "[ops][create]") {
    lock::Pylock lock = parse_lock(package("demo", "[[packages.wheels]]",
                                           "url = \"https://x.test/demo-1.0-py3-none-any.whl\"\n"
                                           "size = 42",
                                           kA, "index = \"https://x.test/simple//\""));
    std::vector<Item> items = select_items(lock, target(), "/p/manifests/pylock.e.toml");
    REQUIRE(items.size() == 1);
    resolve::IndexConfig other, mine;
    other.url = "https://other.test/simple";
    other.username = "nobody";
    mine.url = "https://x.test/simple";
    mine.ca = "/p/ca.pem";
    mine.username = "me";
    mine.password = "secret";
    index::ArtifactRequest req = artifact_request(items[0], {other, mine});
    CHECK(req.display == "demo-1.0-py3-none-any.whl");
    CHECK(req.location == "https://x.test/demo-1.0-py3-none-any.whl");
    CHECK(req.sha256 == kA);
    CHECK(req.size == std::optional<std::uint64_t>(42));
    CHECK(req.index_url == "https://x.test/simple");
    CHECK(req.ca == "/p/ca.pem");
    CHECK(req.username == "me");
    CHECK(req.password == "secret");
    // No matching index: no credentials at all.
    index::ArtifactRequest bare = artifact_request(items[0], {other});
    CHECK(bare.username != "nobody");
}

TEST_CASE("generation_digest: the lock, the interpreter, the platform and prefer",
          "[ops][create]") {
    const install::Target t = target();
    const std::string base = generation_digest("lock text", t, nullptr);
    CHECK(base.size() == 64);
    CHECK(generation_digest("lock text", t, nullptr) == base);
    CHECK(generation_digest("lock text!", t, nullptr) != base);
    install::Target other = t;
    other.interpreter->executable = "/opt/python3.12";
    CHECK(generation_digest("lock text", other, nullptr) != base);
    other = t;
    other.platform = "manylinux_2_17_x86_64";
    CHECK(generation_digest("lock text", other, nullptr) != base);
    lock::Manifest m;
    CHECK(generation_digest("lock text", t, &m) == base);  // no [install].prefer: the same
    m.install_prefer.push_back({"opencv-python-headless", 3});
    CHECK(generation_digest("lock text", t, &m) != base);
    // Bytecode is part of what a generation links: with it, and per level, another digest.
    const store::BytecodeKey k0{"cpython-311", "a70d0d0a", 0}, k1{"cpython-311", "a70d0d0a", 1};
    const std::string compiled = generation_digest("lock text", t, nullptr, {k0});
    CHECK(compiled != base);
    CHECK(generation_digest("lock text", t, nullptr, {k0, k1}) != compiled);
    CHECK(generation_digest("lock text", t, nullptr, {k0}) == compiled);
}

TEST_CASE(
    "bytecode_keys: none with --no-compile or [install] compile = false; PYTHONOPTIMIZE "
    "adds its level",
    "[ops][create]") {
    const install::Target t = target();
    env::Interpreter in = *t.interpreter;
    in.cache_tag = "cpython-311";
    in.magic = "a70d0d0a";
    ops::Progress progress;
    std::optional<bool> compile;  // create's --no-compile: false
    CHECK(bytecode_keys(in, nullptr, compile, progress).size() == 1);
    lock::Manifest m;
    m.run_env["PYTHONOPTIMIZE"] = "1";
    auto keys = bytecode_keys(in, &m, compile, progress);
    REQUIRE(keys.size() == 2);
    CHECK(keys[1].optimize == 1);
    m.install_compile = false;
    CHECK(bytecode_keys(in, &m, compile, progress).empty());
    m.install_compile = true;
    compile = false;
    CHECK(bytecode_keys(in, &m, compile, progress).empty());
    compile.reset();
    in.cache_tag.clear();  // an interpreter that cannot cache bytecode: none, with a note
    CHECK(bytecode_keys(in, &m, compile, progress).empty());
}

TEST_CASE("next_generation_number: one past the highest; unstamped leftovers go", "[ops][create]") {
    TempDir dir;
    CHECK(next_generation_number(dir.path) == 1);
    for (int n : {1, 2}) {
        env::Generation g;
        g.number = n;
        g.path = dir.path / env::generation_dir_name(n);
        g.environment = "e";
        g.lock_digest = kC;
        env::write_generation_record(g, "lock");
        if (n == 1) env::stamp_complete(g.path);
    }
    CHECK(next_generation_number(dir.path) == 3);
    CHECK(fs::exists(dir.path / "gen-1"));
    CHECK_FALSE(fs::exists(dir.path / "gen-2"));  // a crash's leftover
}

TEST_CASE("freshness: a missing lock, a lock envbox did not write, one that is no lock",
          "[ops][create]") {
    TempDir dir;
    const fs::path manifest = dir.path / "e.toml", lock = dir.path / "pylock.e.toml";
    Freshness f = freshness(manifest, lock);
    CHECK(f.state == Freshness::State::missing);
    REQUIRE(f.reasons.size() == 1);
    CHECK(f.reasons[0] == "there is no lock file " + lock.string());
    CHECK_FALSE(f.lock);
    write_file_atomic(lock, "lock-version = \"1.0\"\ncreated-by = \"someone\"\npackages = []\n",
                      0644, Durability::none);
    f = freshness(manifest, lock);
    CHECK(f.state == Freshness::State::foreign);  // used as it is
    CHECK_FALSE(f.needs_lock());
    REQUIRE(f.lock);  // read once: create uses these bytes
    CHECK(f.lock->text == "lock-version = \"1.0\"\ncreated-by = \"someone\"\npackages = []\n");
    CHECK_FALSE(f.lock->tool);
    write_file_atomic(lock, "lock-version = [\n", 0644, Durability::none);
    f = freshness(manifest, lock);
    CHECK(f.state == Freshness::State::foreign);
    CHECK_FALSE(f.lock);  // create reads it again and says why it is no lock
}

TEST_CASE("link_project_dir: .envbox/ENV follows current, or says why not", "[ops][create]") {
    TempDir dir;
    const fs::path project = dir.path / "project", edir = dir.path / "envs" / "e";
    fs::create_directories(project);
    CHECK_FALSE(link_project_dir(project, "e", edir));
    CHECK(fs::read_symlink(project / ".envbox" / "e") == edir / "current");
    CHECK(read_file(project / ".envbox" / ".gitignore") == "*\n");
    CHECK_FALSE(link_project_dir(project, "e", edir));  // again: replaced in place

    write_file_atomic(dir.path / "file", "", 0644, Durability::none);
    auto why = link_project_dir(dir.path / "file", "e", edir);
    REQUIRE(why);
    CHECK(why->starts_with("cannot create " + (dir.path / "file" / ".envbox").string()));

    // A committed `.envbox` link: refused, nothing written into its target.
    const fs::path other = dir.path / "other", victim = dir.path / "victim";
    fs::create_directories(other);
    fs::create_directories(victim);
    fs::create_symlink(victim, other / ".envbox");
    why = link_project_dir(other, "e", edir);
    REQUIRE(why);
    CHECK(why->find("symbolic link") != std::string::npos);
    CHECK(fs::is_empty(victim));
}
