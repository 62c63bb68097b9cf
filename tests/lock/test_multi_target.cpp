// One lock for several targets: `platforms` in the manifest, the merge of the targets'
// resolutions (lock/merge.hpp), and the property that makes it one lock: PEP 751's
// install-time selection picks, on each target, exactly that target's own packages and wheels.
#include <catch2/catch.hpp>

#include "envbox/lock/manifest.hpp"
#include "envbox/lock/merge.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/lock/writer.hpp"

using namespace envbox;

namespace {

const char* kHead = "[environment]\npython = \"3.12\"\n";

struct Arch {
    const char* machine;
    const char* platform;
};
const Arch kX86{"x86_64", "manylinux_2_28_x86_64"};
const Arch kArm{"aarch64", "manylinux_2_28_aarch64"};

// A package of one target: one wheel, tagged for `tag` ("any" for py3-none-any, else the arch).
lock::LockedPackage pkg(std::string name, std::string version, std::string tag,
                        std::vector<lock::LockedDependency> deps = {}) {
    lock::LockedPackage p;
    p.name = name;
    p.version = version;
    p.index = "https://pypi.example/simple";
    std::string dist = name;
    for (auto& c : dist)
        if (c == '-') c = '_';
    lock::LockedWheel w;
    w.filename = dist + "-" + version + "-" +
                 (tag == "any" ? "py3-none-any" : "py3-none-manylinux_2_27_" + tag) + ".whl";
    w.url = "https://files.example/" + w.filename;
    w.sha256 = std::string(64, tag == "any" ? 'a' : tag == "x86_64" ? 'b' : 'c');
    w.size = 100;
    p.wheels.push_back(std::move(w));
    p.dependencies = std::move(deps);
    return p;
}

lock::TargetPackages target(const Arch& a, std::vector<lock::LockedPackage> packages) {
    return {a.platform, std::string("platform_machine == '") + a.machine + "'",
            std::move(packages)};
}

// The lock text of `targets` merged, as `envbox lock` writes it.
std::string lock_text(const std::vector<lock::TargetPackages>& targets,
                      const std::vector<Arch>& arches) {
    lock::LockDocument doc;
    for (const auto& a : arches)
        doc.environments.push_back(
            std::string("python_version == '3.12' and sys_platform == 'linux' and "
                        "platform_machine == '") +
            a.machine + "'");
    doc.requires_python = "==3.12.*";
    doc.packages = lock::merge_targets(targets).packages;
    return lock::write_pylock(doc);
}

// name → (version, wheel file name) of what `select` installs from `text` on `a`.
std::map<std::string, std::pair<std::string, std::string>> selected_on(const std::string& text,
                                                                       const Arch& a) {
    auto lock = lock::Pylock::parse(text, "pylock.toml");
    REQUIRE(lock.ok());
    auto tags = pep::TargetTags::cpython(3, 12, a.platform);
    REQUIRE(tags.ok());
    lock::SelectTarget t;
    t.environment = pep::MarkerEnvironment::linux_cpython("3.12.0", a.machine);
    t.tags = &*tags;
    auto chosen = lock::select(*lock, t);
    REQUIRE(chosen.ok());
    std::map<std::string, std::pair<std::string, std::string>> out;
    for (const auto& s : *chosen)
        out[s.package->name] = {s.package->version->str(), s.file->filename()};
    return out;
}

std::map<std::string, std::pair<std::string, std::string>> own(const lock::TargetPackages& t) {
    std::map<std::string, std::pair<std::string, std::string>> out;
    for (const auto& p : t.packages)
        out[p.name] = {p.version, p.wheels.front().filename};
    return out;
}

}  // namespace

TEST_CASE("platforms lists a manifest's targets; platform alone is a list of one",
          "[lock][multi-target]") {
    auto one = lock::Manifest::parse(
        std::string(kHead) + "platform = \"manylinux_2_28_x86_64\"\nrequirements = []\n", "m.toml");
    REQUIRE(one.ok());
    CHECK(one->platforms == std::vector<std::string>{"manylinux_2_28_x86_64"});
    auto two = lock::Manifest::parse(std::string(kHead) +
                                         "platforms = [\"manylinux_2_28_aarch64\", "
                                         "\"manylinux_2_28_x86_64\"]\nrequirements = []\n",
                                     "m.toml");
    REQUIRE(two.ok());
    CHECK(two->platforms ==
          std::vector<std::string>{"manylinux_2_28_aarch64", "manylinux_2_28_x86_64"});
    CHECK(two->platform == "manylinux_2_28_aarch64");

    struct Row {
        const char* lines;
        const char* expect;
    };
    std::string seventeen = "platforms = [";
    for (int i = 0; i < 17; ++i)
        seventeen += "\"linux_m" + std::to_string(i) + "\", ";
    seventeen += "]\n";
    const Row rows[] = {
        {seventeen.c_str(), "m.toml:3: More than 16 platforms (17) in 'environment.platforms'"},
        {"platform = \"manylinux_2_28_x86_64\"\nplatforms = [\"manylinux_2_28_aarch64\"]\n",
         "Give either 'platform' or 'platforms', not both in 'environment.platform'"},
        {"platforms = []\n", "m.toml:3: Expected at least one platform in 'environment.platforms'"},
        {"platforms = [\"manylinux_2_28_x86_64\", \"win_amd64\"]\n",
         "unsupported target platform 'win_amd64': expected a manylinux, musllinux or linux "
         "platform tag in 'environment.platforms[1]'"},
        {"platforms = [\"manylinux_2_28_x86_64\", \"manylinux_2_28_x86_64\"]\n",
         "'manylinux_2_28_x86_64' is listed twice in 'environment.platforms[1]'"},
        {"platforms = [\"manylinux_2_28_x86_64\", \"manylinux_2_17_x86_64\"]\n",
         "'manylinux_2_17_x86_64' and 'manylinux_2_28_x86_64' are both x86_64: a lock tells its "
         "targets apart by machine"},
        {"platforms = [\"manylinux_2_28_x86_64\", 3]\n", "in 'environment.platforms[1]'"},
        {"platforms = \"manylinux_2_28_x86_64\"\n", "environment.platforms"},
        {"requirements = []\n", "Missing required value in 'environment.platform'"},
    };
    for (const auto& r : rows) {
        std::string doc = std::string(kHead) + r.lines;
        if (std::string(r.lines).find("requirements") == std::string::npos)
            doc += "requirements = []\n";
        INFO(doc);
        auto m = lock::Manifest::parse(doc, "m.toml");
        REQUIRE_FALSE(m.ok());
        CHECK_THAT(m.error().message(), Catch::Contains(r.expect));
    }
}

TEST_CASE("targets that agree make one entry listing each target's wheel, without a marker",
          "[lock][multi-target]") {
    auto merged = lock::merge_targets(
        {target(kX86, {pkg("torch", "2.11.0+cu128", "x86_64", {{"filelock", "3.19.1"}}),
                       pkg("filelock", "3.19.1", "any")}),
         target(kArm, {pkg("torch", "2.11.0+cu128", "aarch64", {{"filelock", "3.19.1"}}),
                       pkg("filelock", "3.19.1", "any")})});
    CHECK(merged.divergences.empty());
    REQUIRE(merged.packages.size() == 2);
    for (const auto& p : merged.packages) {
        INFO(p.name);
        CHECK_FALSE(p.marker);
        CHECK(p.wheels.size() == (p.name == "torch" ? 2u : 1u));  // a shared file once
    }
}

TEST_CASE("where targets disagree, markers select exactly one entry per target",
          "[lock][multi-target]") {
    struct Row {
        const char* what;
        std::vector<lock::LockedPackage> x86, arm;
        std::vector<std::string> divergent;  // names, sorted
    };
    const std::vector<Row> rows = {
        {"a package only one platform needs",
         {pkg("torch", "2.11.0", "x86_64", {{"triton", "3.5.0"}}),
          pkg("triton", "3.5.0", "x86_64")},
         {pkg("torch", "2.11.0", "aarch64")},
         {"triton"}},
        {"another version on one platform (the newest lacks an aarch64 wheel)",
         {pkg("tokenizers", "0.22.1", "x86_64"), pkg("safetensors", "0.6.2", "any")},
         {pkg("tokenizers", "0.22.0", "aarch64"), pkg("safetensors", "0.6.2", "any")},
         {"tokenizers"}},
        {"versions differ and a dependent names each",
         {pkg("a", "1.0", "any", {{"b", "2.0"}}), pkg("b", "2.0", "x86_64")},
         {pkg("a", "1.0", "any", {{"b", "1.0"}}), pkg("b", "1.0", "aarch64"),
          pkg("arm-only", "1.0", "aarch64")},
         {"arm-only", "b"}},
        {"nothing in common",
         {pkg("x", "1.0", "x86_64")},
         {pkg("y", "1.0", "aarch64")},
         {"x", "y"}},
        {"an empty target", {pkg("x", "1.0", "x86_64")}, {}, {"x"}},
    };
    for (const auto& r : rows) {
        INFO(r.what);
        const std::vector<lock::TargetPackages> targets = {target(kX86, r.x86),
                                                           target(kArm, r.arm)};
        auto merged = lock::merge_targets(targets);
        std::vector<std::string> names;
        for (const auto& d : merged.divergences)
            names.push_back(d.name);
        CHECK(names == r.divergent);
        const std::string text = lock_text(targets, {kX86, kArm});
        // The property: each target installs exactly what its own resolution chose.
        CHECK(selected_on(text, kX86) == own(targets[0]));
        CHECK(selected_on(text, kArm) == own(targets[1]));
        // Deterministic, whatever order the targets' packages came in.
        std::vector<lock::TargetPackages> reversed = targets;
        for (auto& t : reversed)
            std::reverse(t.packages.begin(), t.packages.end());
        CHECK(lock_text(reversed, {kX86, kArm}) == text);
    }
}

TEST_CASE("a divergence records each target's version, empty where it needs none",
          "[lock][multi-target]") {
    auto merged =
        lock::merge_targets({target(kX86, {pkg("b", "2.0", "x86_64"), pkg("c", "1.0", "any")}),
                             target(kArm, {pkg("b", "1.0", "aarch64")})});
    REQUIRE(merged.divergences.size() == 2);
    CHECK(merged.divergences[0].name == "b");
    CHECK(merged.divergences[0].versions == std::vector<std::string>{"2.0", "1.0"});
    CHECK(merged.divergences[1].versions == std::vector<std::string>{"1.0", ""});
    for (const auto& p : merged.packages) {
        INFO(p.name << " " << p.version);
        REQUIRE(p.marker);
        CHECK(*p.marker == (p.version == "2.0" || p.name == "c" ? "platform_machine == 'x86_64'"
                                                                : "platform_machine == 'aarch64'"));
    }
}

TEST_CASE("a lock's text names every target in environments and the entries' markers",
          "[lock][multi-target]") {
    const std::vector<lock::TargetPackages> targets = {target(kX86, {pkg("b", "2.0", "x86_64")}),
                                                       target(kArm, {pkg("b", "1.0", "aarch64")})};
    const std::string text = lock_text(targets, {kX86, kArm});
    CHECK_THAT(text, Catch::Contains(
                         "environments = [\"python_version == '3.12' and sys_platform == 'linux' "
                         "and platform_machine == 'x86_64'\", \"python_version == '3.12' and "
                         "sys_platform == 'linux' and platform_machine == 'aarch64'\"]\n"));
    CHECK_THAT(text, Catch::Contains("name = \"b\"\nversion = \"1.0\"\nmarker = "
                                     "\"platform_machine == 'aarch64'\"\n"));
    CHECK(text.find("version = \"1.0\"") < text.find("version = \"2.0\""));
    // A target outside the lock is refused by the lock's environments.
    auto lock = lock::Pylock::parse(text, "pylock.toml");
    REQUIRE(lock.ok());
    auto tags = pep::TargetTags::cpython(3, 12, "manylinux_2_28_ppc64le");
    REQUIRE(tags.ok());
    lock::SelectTarget t;
    t.environment = pep::MarkerEnvironment::linux_cpython("3.12.0", "ppc64le");
    t.tags = &*tags;
    CHECK_FALSE(lock::select(*lock, t).ok());
}

TEST_CASE("one target's view of a lock keeps its entries and renumbers their edges",
          "[lock][multi-target]") {
    const std::vector<lock::TargetPackages> targets = {
        target(kX86, {pkg("a", "1.0", "any", {{"b", "2.0"}, {"t", "1.0"}}),
                      pkg("b", "2.0", "x86_64"), pkg("t", "1.0", "x86_64")}),
        target(kArm, {pkg("a", "1.0", "any", {{"b", "1.0"}}), pkg("b", "1.0", "aarch64")})};
    auto lock = lock::Pylock::parse(lock_text(targets, {kX86, kArm}), "pylock.toml");
    REQUIRE(lock.ok());
    auto arm = lock::for_target(*lock, pep::MarkerEnvironment::linux_cpython("3.12.0", "aarch64"));
    REQUIRE(arm.ok());
    CHECK_FALSE(arm->environments);
    REQUIRE(arm->packages.size() == 2);
    CHECK(arm->packages[0].name == "a");
    REQUIRE(arm->packages[0].dependencies->size() == 1);  // t and b 2.0 are x86_64's
    const auto& edge = arm->packages[0].dependencies->front();
    REQUIRE(edge.packages.size() == 1);
    CHECK(arm->packages[edge.packages[0]].version->str() == "1.0");
    auto x86 = lock::for_target(*lock, pep::MarkerEnvironment::linux_cpython("3.12.0", "x86_64"));
    REQUIRE(x86.ok());
    CHECK(x86->packages.size() == 3);
}
