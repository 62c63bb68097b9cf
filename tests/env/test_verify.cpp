// verify_tree over a small generation installed from a hand-made plan: clean, then one kind of
// drift at a time (missing, extra, modified, foreign .dist-info, a touched or deleted store
// object), with and without --deep.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <string>

#include "envbox/env/installer.hpp"
#include "envbox/env/verify.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {

const std::string kSite = "lib/python3.12/site-packages";
const std::string kObject = "print('placed')\n";

// A generation: one file linked from a store object, one generated file, one generated
// executable, and a skeleton of a symlink and a small file.
struct Generation {
    fs::path tmp;
    std::unique_ptr<store::Store> store;
    store::WheelFile object;
    env::VenvLayout layout;
    env::InstallPlan plan;
    std::vector<env::VenvEntry> skeleton;

    Generation() {
        std::string tmpl = (fs::temp_directory_path() / "envbox-verify-XXXXXX").string();
        tmp = ::mkdtemp(tmpl.data());
        store = std::make_unique<store::Store>(tmp / "home");
        object.path = "pkg/mod.py";
        object.digest = to_hex(sha256(kObject));
        object.size = kObject.size();
        const fs::path obj = object_path();
        write_file_atomic(obj, kObject, 0444, Durability::none);
        const struct timespec times[2] = {{store::kObjectMtime, 0}, {store::kObjectMtime, 0}};
        REQUIRE(::utimensat(AT_FDCWD, obj.c_str(), times, 0) == 0);

        layout.root = tmp / "gen-1";
        layout.purelib = layout.platlib = layout.root / kSite;
        layout.scripts = layout.root / "bin";
        fs::create_directories(layout.root);
        plan.dirs = {"bin", "lib", "lib/python3.12", kSite, kSite + "/pkg"};
        plan.files.push_back({kSite + "/pkg/mod.py", &object, {}, false, 0});
        plan.files.push_back({kSite + "/pkg/gen.txt", nullptr, "generated\n", false, 0});
        plan.files.push_back({"bin/tool", nullptr, "#!/bin/sh\n", true, 0});
        env::apply_install(*store, layout, plan, LinkMode::hardlink, 1);

        skeleton.push_back({"bin/python", {}, "/usr/bin/python3", 0777});
        skeleton.push_back({"pyvenv.cfg", "home = /usr/bin\n", {}, 0644});
        fs::create_symlink("/usr/bin/python3", layout.root / "bin/python");
        write_file_atomic(layout.root / "pyvenv.cfg", "home = /usr/bin\n", 0644, Durability::none);
    }
    ~Generation() {
        std::error_code ec;
        fs::remove_all(tmp, ec);
    }
    fs::path object_path() const { return store->object_path(object.digest, false); }
    fs::path at(const std::string& rel) const { return layout.root / rel; }

    env::VerifyReport verify(bool deep) const {
        return env::verify_tree(*store, layout, plan, skeleton, env::walk_generation(layout.root),
                                deep, 2);
    }
};

std::string describe(const env::VerifyReport& r) {
    std::string out;
    for (const auto& d : r.drift)
        out += std::string(env::drift_kind_name(d.kind)) + " " + d.path + " " + d.detail + "\n";
    return out;
}

}  // namespace

TEST_CASE("verify: a generation as installed is clean", "[env][verify]") {
    Generation g;
    for (bool deep : {false, true}) {
        INFO("deep " << deep);
        env::VerifyReport r = g.verify(deep);
        INFO(describe(r));
        CHECK(r.clean());
        CHECK(r.files_checked == 5);  // two of the skeleton, three planned
        // The linked file is proved by its inode; --deep hashes it too.
        CHECK(r.hashed == (deep ? 3u : 2u));
    }
}

TEST_CASE("verify: each kind of drift", "[env][verify]") {
    struct Row {
        const char* what;
        std::function<void(Generation&)> change;
        std::string expect;  // "kind path detail", one line per drift, sorted by path
        bool deep_same = true;
    };
    const std::string mod = kSite + "/pkg/mod.py";
    const Row rows[] = {
        {"a planned file removed", [&](Generation& g) { fs::remove(g.at(mod)); },
         "missing " + mod + " \n"},
        {"a file nobody planned",
         [](Generation& g) {
             write_file_atomic(g.at(kSite + "/pkg/stray.py"), "", 0644, Durability::none);
         },
         "extra " + kSite + "/pkg/stray.py \n"},
        {"a directory nobody planned, reported once",
         [](Generation& g) {
             fs::create_directories(g.at("share/x"));
             write_file_atomic(g.at("share/x/y"), "", 0644, Durability::none);
         },
         "extra share/ directory\n"},
        {"a .dist-info of another installer",
         [](Generation& g) {
             fs::create_directories(g.at(kSite + "/requests-2.0.dist-info"));
             write_file_atomic(g.at(kSite + "/requests-2.0.dist-info/INSTALLER"), "pip\n", 0644,
                               Durability::none);
         },
         "foreign " + kSite + "/requests-2.0.dist-info installed by pip\n"},
        {"a .dist-info without INSTALLER",
         [](Generation& g) { fs::create_directories(g.at(kSite + "/x-1.dist-info")); },
         "foreign " + kSite + "/x-1.dist-info unknown installer\n"},
        {"a generated file rewritten",
         [](Generation& g) {
             write_file_atomic(g.at(kSite + "/pkg/gen.txt"), "edited\n", 0644, Durability::none);
         },
         "modified " + kSite + "/pkg/gen.txt content differs from what envbox wrote\n"},
        {"a script that lost its exec bit",
         [](Generation& g) { fs::permissions(g.at("bin/tool"), fs::perms(0644)); },
         "modified bin/tool lost its exec bit\n"},
        {"a generated file made executable",
         [](Generation& g) { fs::permissions(g.at(kSite + "/pkg/gen.txt"), fs::perms(0755)); },
         "modified " + kSite + "/pkg/gen.txt became executable\n"},
        {"a linked file replaced by other bytes of its size",
         [&](Generation& g) {
             fs::remove(g.at(mod));
             std::string other = kObject;
             other[0] = 'P';
             write_file_atomic(g.at(mod), other, 0444, Durability::none);
         },
         "modified " + mod + " content differs from the lock\n"},
        {"a linked file replaced by a longer one",
         [&](Generation& g) {
             fs::remove(g.at(mod));
             write_file_atomic(g.at(mod), kObject + "#\n", 0444, Durability::none);
         },
         "modified " + mod + " size " + std::to_string(kObject.size() + 2) + ", expected " +
             std::to_string(kObject.size()) + "\n"},
        {"a skeleton symlink pointing elsewhere",
         [](Generation& g) {
             fs::remove(g.at("bin/python"));
             fs::create_symlink("/opt/python", g.at("bin/python"));
         },
         "modified bin/python points to /opt/python\n"},
        {"a skeleton file removed", [](Generation& g) { fs::remove(g.at("pyvenv.cfg")); },
         "missing pyvenv.cfg \n"},
    };
    for (const Row& r : rows) {
        for (bool deep : {false, true}) {
            INFO(r.what << (deep ? " (deep)" : ""));
            Generation g;
            r.change(g);
            CHECK(describe(g.verify(deep)) == r.expect);
        }
    }
}

TEST_CASE("verify: a store object touched or deleted is the store's drift", "[env][verify]") {
    const std::string mod = kSite + "/pkg/mod.py";
    SECTION("chmod-ed through its link") {
        Generation g;
        fs::permissions(g.object_path(), fs::perms(0644));
        env::VerifyReport r = g.verify(false);
        REQUIRE(r.drift.size() == 1);
        CHECK(r.drift[0].kind == env::Drift::Kind::store_object_touched);
        CHECK(r.drift[0].path == g.object_path().string());
        CHECK(r.drift[0].detail == "store object mode 0644, expected 0444; linked as " + mod);
        CHECK(r.drift[0].object_digest == g.object.digest);
    }
    SECTION("deleted from the store") {
        Generation g;
        fs::remove(g.object_path());
        for (bool deep : {false, true}) {
            INFO("deep " << deep);
            env::VerifyReport r = g.verify(deep);
            REQUIRE(r.drift.size() == 1);
            CHECK(r.drift[0].kind == env::Drift::Kind::store_object_touched);
            CHECK(r.drift[0].detail ==
                  "store object missing (deleted from the store); linked as " + mod);
        }
    }
}
