#include <catch2/catch.hpp>

#include "envbox/pep/filename.hpp"
#include "envbox/pep/metadata.hpp"

using namespace envbox::pep;

TEST_CASE("PyTorch wheel URLs decode to their file names") {
    auto name = filename_from_url(
        "https://download.pytorch.org/whl/cu128/torch-2.11.0%2Bcu128-cp312-cp312-"
        "manylinux_2_28_x86_64.whl#sha256=abc");
    CHECK(name == "torch-2.11.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl");
    auto w = WheelFilename::parse(name);
    REQUIRE(w.ok());
    CHECK(w->canonical_name == "torch");
    CHECK(w->version.str() == "2.11.0+cu128");
    CHECK(w->version.local_str() == "cu128");
}

TEST_CASE("wheel ranking for a cp312 manylinux_2_28 target") {
    auto target = TargetTags::cpython(3, 12, "manylinux_2_28_x86_64");
    REQUIRE(target.ok());
    CHECK(target->tags().size() == 771);
    auto rank = [&](const char* file) {
        return target->best_rank(WheelFilename::parse(file)->tags);
    };
    auto native = rank("torch-2.11.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl");
    auto old_glibc = rank("numpy-2.3.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
    auto abi3 = rank("cryptography-45.0.0-cp311-abi3-manylinux_2_28_x86_64.whl");
    auto plain_linux = rank("torch-2.1.0+cu121-cp312-cp312-linux_x86_64.whl");
    auto pure = rank("safetensors-0.6.0-py3-none-any.whl");
    REQUIRE(native);
    REQUIRE(old_glibc);
    REQUIRE(abi3);
    REQUIRE(plain_linux);
    REQUIRE(pure);
    CHECK(*native < *old_glibc);
    CHECK(*old_glibc < *plain_linux);  // linux_x86_64 ranks after every manylinux tag
    CHECK(*plain_linux < *abi3);       // then stable-ABI wheels of older minors
    CHECK(*abi3 < *pure);
    CHECK_FALSE(rank("torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl"));
    CHECK_FALSE(rank("torch-2.11.0-cp312-cp312-manylinux_2_34_x86_64.whl"));
    CHECK_FALSE(rank("torch-2.11.0-cp312-cp312-musllinux_1_2_x86_64.whl"));
    CHECK_FALSE(rank("torch-2.11.0-cp312-cp312-manylinux_2_28_aarch64.whl"));
}

TEST_CASE("unsupported target platforms are errors") {
    CHECK_FALSE(TargetTags::cpython(3, 12, "win_amd64").ok());
    CHECK_FALSE(TargetTags::cpython(3, 12, "manylinux_2_4_x86_64").ok());
    CHECK(TargetTags::cpython(3, 12, "manylinux2014_aarch64").ok());
    // Every minor version below the target's is a tag of its own: a version past any real libc
    // (found by fuzz_manifest_pylock: a manifest's platform made 1.7 million tags) is refused,
    // as is one past an int.
    for (const char* tag : {"manylinux_2_1726484_x86_64", "manylinux_2_4294967297_x86_64",
                            "musllinux_1_100000_x86_64", "manylinux_4294967298_17_x86_64"}) {
        INFO(tag);
        auto t = TargetTags::cpython(3, 12, tag);
        REQUIRE_FALSE(t.ok());
        CHECK_THAT(t.error().message(), Catch::Contains("at most 999"));
    }
    CHECK(TargetTags::cpython(3, 12, "manylinux_2_999_x86_64").ok());
}

TEST_CASE("core metadata of every version parses") {
    for (const char* mv : {"1.0", "1.1", "1.2", "2.1", "2.2", "2.3", "2.4"}) {
        INFO(mv);
        std::string text = std::string("Metadata-Version: ") + mv +
                           "\nName: Torch\nVersion: 2.11.0+cu128\n"
                           "Summary: Tensors and Dynamic neural networks\n"
                           "License: BSD-3-Clause\n  second line of the licence\n"
                           "Requires-Python: >=3.10\n"
                           "Requires-Dist: filelock\n"
                           "Requires-Dist: nvidia-cublas-cu12==12.8.4.1; platform_system == "
                           "\"Linux\"\n"
                           "Requires-Dist: opt-einsum>=3.3; extra == \"opt-einsum\"\n"
                           "Provides-Extra: Opt_Einsum\n\nLong description: ignored\n"
                           "Requires-Dist: not-a-header\n";
        auto md = CoreMetadata::parse(text);
        REQUIRE(md.ok());
        CHECK(md->name == "Torch");
        CHECK(md->version.str() == "2.11.0+cu128");
        CHECK(md->requires_dist.size() == 3);
        CHECK(md->requires_python->str() == ">=3.10");
        CHECK(md->provides_extra == std::vector<std::string>{"opt-einsum"});
        CHECK(md->get_all("license") ==
              std::vector<std::string>{"BSD-3-Clause\nsecond line of the licence"});
    }
    CHECK_FALSE(CoreMetadata::parse("Metadata-Version: 3.0\nName: x\nVersion: 1\n").ok());
    // Each Requires-Dist is a page to fetch and an edge a lock records (at most 4096).
    std::string many = "Metadata-Version: 2.1\nName: x\nVersion: 1\n";
    for (int i = 0; i < 4097; ++i)
        many += "Requires-Dist: d" + std::to_string(i) + "\n";
    CHECK_FALSE(CoreMetadata::parse(many).ok());
    CHECK_FALSE(CoreMetadata::parse("Metadata-Version: 2.1\nName: x\nVersion: 1.x\n").ok());
    CHECK_FALSE(CoreMetadata::parse("Metadata-Version: 2.1\nName: x\nVersion: 1\n"
                                    "Requires-Dist: y >= \n")
                    .ok());
}

TEST_CASE("a wheel name whose tag set expands past the bound is invalid, not expanded") {
    // Three dotted sets of 300: 27 million tags were it expanded (a name from a lock or an
    // index page); the bound refuses it before a tag is built.
    std::string sets[3];
    for (int i = 0; i < 300; ++i)
        for (int p = 0; p < 3; ++p)
            sets[p] += (i ? "." : "") +
                       std::string(p == 0   ? "py"
                                   : p == 1 ? "abi"
                                            : "plat") +
                       std::to_string(i);
    auto w = WheelFilename::parse("pkg-1.0-" + sets[0] + "-" + sets[1] + "-" + sets[2] + ".whl");
    REQUIRE_FALSE(w);
    CHECK_THAT(w.error().message(), Catch::Matchers::Contains("expands to 27000000 tags, more "
                                                              "than the 256 allowed"));
    // As many as real wheels name, and up to the bound, parse.
    auto numpy = WheelFilename::parse(
        "numpy-2.3.4-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl");
    REQUIRE(numpy);
    CHECK(numpy->tags.size() == 2);
    auto at_bound =
        WheelFilename::parse("pkg-1.0-a.b.c.d-e.f.g.h-i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.whl");
    REQUIRE(at_bound);
    CHECK(at_bound->tags.size() == 256);
    CHECK_FALSE(
        WheelFilename::parse("pkg-1.0-a.b.c.d-e.f.g.h-i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.whl"));
    // Sets whose product wraps past 2^64 (to 0, which a plain product would let through):
    // refused from the count of dots, before a component is split out.
    auto dots = [](std::size_t n) {
        std::string set(2 * n - 1, '.');
        for (std::size_t i = 0; i < set.size(); i += 2)
            set[i] = 'a';
        return set;
    };
    auto wrapped = WheelFilename::parse("pkg-1.0-" + dots(std::size_t{1} << 22) + "-" +
                                        dots(std::size_t{1} << 21) + "-" +
                                        dots(std::size_t{1} << 21) + ".whl");
    REQUIRE_FALSE(wrapped);
    CHECK_THAT(wrapped.error().message(), Catch::Matchers::Contains("more than 2^64"));
}
