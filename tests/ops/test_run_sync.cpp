// ops::plan_sync: what `run` does before running ENV, from a project's files and generations.
#include <catch2/catch.hpp>
#include <filesystem>

#include "envbox/ops/run.hpp"
#include "envbox/util/fs.hpp"
#include "temp_dir.hpp"

using namespace envbox;
using envboxtest::TempDir;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    write_file_atomic(p, text, 0644, Durability::none);
}

}  // namespace

TEST_CASE("plan_sync: nothing without a manifest; a missing lock and generation are reasons",
          "[ops][run]") {
    TempDir dir;
    ops::Context ctx;
    ctx.home = dir.path / "home";
    SECTION("no project: run says what is missing itself") {
        CHECK(ops::plan_sync(ctx, "e").reasons.empty());
    }
    ctx.project_root = dir.path / "project";
    fs::create_directories(ctx.project().manifests());
    SECTION("a project without manifests/e.toml: a generation from --lock FILE runs as it is") {
        CHECK(ops::plan_sync(ctx, "e").reasons.empty());
    }
    write(ctx.project().manifest("e"), "[environment]\npython = \"3.11\"\n");
    SECTION("no lock and no generation: lock, then create") {
        const ops::SyncPlan plan = ops::plan_sync(ctx, "e");
        CHECK(plan.stale_lock);
        CHECK(plan.reasons ==
              std::vector<std::string>{"there is no lock file " + ctx.project().lock("e").string(),
                                       "no generation was ever created"});
        CHECK(plan.what == " has no generation yet");
        CHECK(plan.note.empty());
    }
    SECTION("a lock another tool wrote is taken as it is: create alone") {
        write(ctx.project().lock("e"),
              "lock-version = \"1.0\"\ncreated-by = \"other\"\npackages = []\n");
        const ops::SyncPlan plan = ops::plan_sync(ctx, "e");
        CHECK_FALSE(plan.stale_lock);
        CHECK(plan.reasons == std::vector<std::string>{"no generation was ever created"});
    }
}
