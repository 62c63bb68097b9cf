#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "../../src/cli/diff_render.hpp"
#include "envbox/ops/diff.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/process.hpp"

// How `envbox diff` classifies one package locked on both sides, over changes real locks show:
// PyPI upgrades, PyTorch local labels, a package moving index, a wheel for another Python, a
// build-tag respin, and a wheel re-uploaded under the same name with other bytes.
namespace {

using envbox::ops::DiffEntry;
using envbox::ops::LockView;

LockView side(const std::string& label, const std::string& name, const std::string& version,
              const std::string& index, const std::string& filename, const std::string& sha256,
              std::uint64_t size) {
    LockView v;
    v.label = label;
    LockView::Entry e;
    e.name = name;
    e.version = version;
    e.index = index;
    e.filename = filename;
    e.sha256 = sha256;
    e.size = size;
    v.packages.push_back(e);
    return v;
}

const std::string kPypi = "https://pypi.org/simple",
                  kCu128 = "https://download.pytorch.org/whl/cu128";
const std::string kShaA(64, 'a'), kShaB(64, 'b');

}  // namespace

TEST_CASE("diff names what changed for a package locked on both sides") {
    struct Row {
        const char* what;
        std::string name, v1, ix1, file1, sha1;
        std::uint64_t size1;
        std::string v2, ix2, file2, sha2;
        std::uint64_t size2;
        std::optional<DiffEntry::Kind> kind;  // nullopt: unchanged
        std::string detail;
    };
    const std::string np = "numpy-2.3.3-cp312-cp312-manylinux_2_28_x86_64.whl";
    const Row rows[] = {
        {"nothing", "numpy", "2.3.3", kPypi, np, kShaA, 100, "2.3.3", kPypi, np, kShaA, 100,
         std::nullopt, ""},
        {"upgrade", "numpy", "2.3.3", kPypi, np, kShaA, 100, "2.3.4", kPypi,
         "numpy-2.3.4-cp312-cp312-manylinux_2_28_x86_64.whl", kShaB, 120, DiffEntry::Kind::upgraded,
         ""},
        {"downgrade", "numpy", "2.3.3", kPypi, np, kShaA, 100, "2.2.6", kPypi,
         "numpy-2.2.6-cp312-cp312-manylinux_2_28_x86_64.whl", kShaB, 90,
         DiffEntry::Kind::downgraded, ""},
        {"local label", "torch", "2.11.0+cu128", kCu128,
         "torch-2.11.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl", kShaA, 900, "2.11.0+cu130",
         "https://download.pytorch.org/whl/cu130",
         "torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", kShaB, 950,
         DiffEntry::Kind::local_label, ""},
        {"index", "filelock", "3.19.1", kCu128, "filelock-3.19.1-py3-none-any.whl", kShaA, 10,
         "3.19.1", kPypi, "filelock-3.19.1-py3-none-any.whl", kShaA, 10,
         DiffEntry::Kind::index_changed, ""},
        {"tags", "numpy", "2.3.3", kPypi, "numpy-2.3.3-cp311-cp311-manylinux_2_28_x86_64.whl",
         kShaA, 100, "2.3.3", kPypi, np, kShaB, 101, DiffEntry::Kind::wheel_changed,
         "tags cp311-cp311-manylinux_2_28_x86_64 → cp312-cp312-manylinux_2_28_x86_64"},
        {"build tag", "triton", "3.5.0", kCu128,
         "triton-3.5.0-1-cp312-cp312-manylinux_2_28_x86_64.whl", kShaA, 50, "3.5.0", kCu128,
         "triton-3.5.0-2-cp312-cp312-manylinux_2_28_x86_64.whl", kShaB, 50,
         DiffEntry::Kind::wheel_changed, "build tag 1 → 2"},
        {"re-upload", "numpy", "2.3.3", kPypi, np, kShaA, 100, "2.3.3", kPypi, np, kShaB, 104,
         DiffEntry::Kind::rebuilt, "same version, new sha256 and size"},
        {"re-upload, same size", "numpy", "2.3.3", kPypi, np, kShaA, 100, "2.3.3", kPypi, np, kShaB,
         100, DiffEntry::Kind::rebuilt, "same version, new sha256"},
    };
    for (const Row& r : rows) {
        INFO(r.what);
        auto d = envbox::ops::diff(side("a", r.name, r.v1, r.ix1, r.file1, r.sha1, r.size1),
                                   side("b", r.name, r.v2, r.ix2, r.file2, r.sha2, r.size2));
        if (!r.kind) {
            CHECK(d.entries.empty());
            CHECK(d.unchanged == 1);
            CHECK(envbox::cli::render_text(d, false).find("no changes") != std::string::npos);
            continue;
        }
        REQUIRE(d.entries.size() == 1);
        const DiffEntry& e = d.entries[0];
        CHECK(e.kind == *r.kind);
        CHECK(e.detail == r.detail);
        CHECK(e.sha256_before == r.sha1);
        CHECK(e.sha256_after == r.sha2);
        CHECK(d.download_delta ==
              static_cast<std::int64_t>(r.size2) - static_cast<std::int64_t>(r.size1));
        CHECK(envbox::cli::render_text(d, false).find("no changes") == std::string::npos);
        CHECK(envbox::cli::render_json(d).find("\"sha256_after\": \"" + r.sha2 + "\"") !=
              std::string::npos);
    }
}

// The reports `envbox diff` prints for two real locks (tests/lock/golden/diff.before.pylock.toml
// → diff.after.pylock.toml, one change of each kind), pinned byte for byte in
// tests/lock/golden/diff.{txt,md,json}. ENVBOX_ACCEPT_GOLDEN=1 rewrites the golden files.
namespace {

const std::string kGolden = ENVBOX_SOURCE_DIR "/tests/lock/golden/";

LockView golden_side(const std::string& name) {
    envbox::ops::Context ctx;
    ctx.home = "/nonexistent/envbox-home";  // no store: installed sizes stay unknown
    LockView v = envbox::ops::load_side(ctx, kGolden + name, false);
    v.label = name;  // the report names the lock as given; keep it free of this checkout's path
    return v;
}

// Empty when `actual` is the golden file's text, else the unified difference (golden → actual).
std::string golden_difference(const std::string& name, const std::string& actual) {
    const std::string path = kGolden + name;
    if (const char* accept = std::getenv("ENVBOX_ACCEPT_GOLDEN"); accept && *accept == '1')
        envbox::write_file_atomic(path, actual);
    std::error_code ec;
    std::string expected = std::filesystem::exists(path, ec) ? envbox::read_file(path) : "";
    if (expected == actual) return "";
    const auto tmp = std::filesystem::temp_directory_path() / ("envbox-actual-" + name);
    envbox::write_file_atomic(tmp, actual);
    auto r = envbox::run_capture({"diff", "-u", "--label", "golden/" + name, "--label",
                                  "actual/" + name, path, tmp.string()});
    std::filesystem::remove(tmp, ec);
    return r.out.empty() ? "(cannot run diff -u; the texts differ)" : r.out;
}

}  // namespace

TEST_CASE("diff's text, markdown and json reports match their golden files", "[diff][golden]") {
    auto d = envbox::ops::diff(golden_side("diff.before.pylock.toml"),
                               golden_side("diff.after.pylock.toml"));
    const std::pair<std::string, std::string> reports[] = {
        {"diff.txt", envbox::cli::render_text(d, false)},
        {"diff.md", envbox::cli::render_markdown(d)},
        {"diff.json", envbox::cli::render_json(d)},
    };
    for (const auto& [name, text] : reports) {
        INFO(name);
        const std::string difference = golden_difference(name, text);
        // The difference goes to stderr as it is: Catch would wrap its lines.
        if (!difference.empty())
            std::fprintf(stderr, "%s differs from its golden file:\n%s", name.c_str(),
                         difference.c_str());
        CHECK(difference.empty());
    }
}
