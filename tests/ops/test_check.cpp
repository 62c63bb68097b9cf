// `envbox check`'s parts that need no interpreter: the modules a wheel installs (real wheel
// layouts: torch's, NVIDIA's namespace wheels, a `.data/purelib` member, a stray `tests/`), the
// probe's output read as hostile text, the architectures torch was built for against a device,
// and the comparison of two records.
#include <catch2/catch.hpp>

#include "envbox/env/check_record.hpp"
#include "envbox/ops/check.hpp"
#include "envbox/util/error.hpp"

using namespace envbox;

namespace {

store::WheelFiles wheel(const std::string& dist_info, std::vector<std::string> paths) {
    store::WheelFiles w;
    w.dist_info = dist_info;
    for (auto& p : paths)
        w.files.push_back({std::move(p), std::string(64, 'a'), 1, false});
    return w;
}

env::CheckRecord parse_probe(const std::string& body, const std::vector<std::string>& asked = {}) {
    return env::parse_check("envbox-check-probe 1\n" + body, "probe", true, asked);
}

}  // namespace

TEST_CASE("the modules a wheel installs at top level") {
    CHECK(
        ops::top_level_modules(wheel(
            "torch-2.11.0.dist-info",
            {"torch/__init__.py", "torch/_C.cpython-312-x86_64-linux-gnu.so",
             "functorch/__init__.py", "torchgen/__init__.py", "torch-2.11.0.dist-info/RECORD"})) ==
        std::vector<std::string>{"functorch", "torch", "torchgen"});
    // NVIDIA's wheels share the `nvidia` namespace: each package of it counts.
    CHECK(ops::top_level_modules(
              wheel("nvidia_cublas-13.0.dist-info",
                    {"nvidia/cublas/__init__.py", "nvidia/cublas/lib/libcublas.so.13",
                     "nvidia/cu13/include/x.h"})) == std::vector<std::string>{"nvidia.cublas"});
    // Extension modules and plain modules at the top; purelib members; nothing shipped by
    // mistake, nothing that is no identifier.
    CHECK(ops::top_level_modules(wheel(
              "six-1.0.dist-info",
              {"six.py", "_cffi_backend.cpython-312-x86_64-linux-gnu.so",
               "six-1.0.data/purelib/extra.py", "six-1.0.data/scripts/tool", "tests/__init__.py",
               "my-dir/__init__.py", "README.md", "__pycache__/six.cpython-312.pyc", "six.pth"})) ==
          std::vector<std::string>{"_cffi_backend", "extra", "six"});
}

TEST_CASE("the probe's output is read as hostile text") {
    const auto r = parse_probe(
        "python 3.12.3\nimport torch ok 1.204 \n"
        "import flashy failed 0.012 ImportError:%20undefined%20symbol:%20_ZN3c10\n"
        "gpu-none torch.cuda.is_available()%20is%20False\n",
        {"torch", "flashy"});
    REQUIRE(r.imports.size() == 2);
    CHECK(r.imports[1].message == "ImportError: undefined symbol: _ZN3c10");
    CHECK(r.gpu.none == "torch.cuda.is_available() is False");
    CHECK(r.findings() ==
          std::vector<std::string>{"import flashy failed: ImportError: undefined symbol: _ZN3c10"});
    // A module nobody asked for, one reported twice, a line of no known kind, a bad number, a
    // malformed escape, the wrong header: each refused with the file and line.
    for (const std::string bad :
         {"import other ok 0.1\n", "import torch ok 0.1\nimport torch ok 0.1\n", "hello world\n",
          "import torch ok -1\n", "import torch ok nan\n", "import torch maybe 0.1\n",
          "import torch failed 0.1 %zz\n", "import ../x ok 0.1\n", "capability 90\n",
          "arch-list sm_90,;rm\n", "context-bytes 12x\n", "generation 3\n"}) {
        INFO(bad);
        CHECK_THROWS_AS(parse_probe(bad, {"torch"}), Error);
    }
    CHECK_THROWS_AS(env::parse_check("import torch ok 0.1\n", "probe", true), Error);
    // A record needs its generation and time.
    CHECK_THROWS_AS(env::parse_check("envbox-check 1\npython 3.12\n", "record", false), Error);
    // Hidden characters are shown, long messages cut.
    const auto hidden = parse_probe("import torch failed 0 a%1B[31mb%E2%80%AEc\n");
    CHECK(hidden.imports[0].message == "a\\x1b[31mb\\u202ec");
    const auto longer = parse_probe("import torch failed 0 " + std::string(5000, 'x') + "\n");
    CHECK(longer.imports[0].message.size() == 2000);
}

TEST_CASE("a record reads back as written") {
    auto r = parse_probe(
        "import torch ok 1.5\ntorch 2.11.0+cu130\ncuda 13.0\ncudnn 91300\nnccl 2.27.7\n"
        "device NVIDIA%20H100\ncapability sm_90\narch-list sm_80,sm_90,compute_90\n"
        "context-bytes 534773760\nmatmul-tflops 712.4\n");
    r.generation = 4;
    r.when = "2026-12-06T10:00:00Z";
    r.caches.push_back({"TORCH_EXTENSIONS_DIR", 3, 6000060});
    const std::string text = env::check_record_text(r);
    const auto back = env::parse_check(text, "record", false);
    CHECK(env::check_record_text(back) == text);
    CHECK(back.generation == 4);
    CHECK(back.gpu.device == "NVIDIA H100");
    CHECK(*back.gpu.context_bytes == 534773760u);
    CHECK(back.caches.size() == 1);
}

TEST_CASE("the device against the architectures torch was built for") {
    env::GpuFigures g;
    g.device = "GPU";
    const auto supports = [&](std::string cap, std::vector<std::string> list) {
        g.capability = std::move(cap);
        g.arch_list = std::move(list);
        return g.arch_supported();
    };
    CHECK(supports("sm_90", {"sm_80", "sm_90"}));
    CHECK(supports("sm_86", {"sm_80"}));                   // the same major line, a higher minor
    CHECK_FALSE(supports("sm_86", {"sm_90"}));             // a newer line does not run here
    CHECK_FALSE(supports("sm_120", {"sm_90", "sm_100"}));  // nor an older major without PTX
    CHECK(supports("sm_120", {"sm_90", "compute_90"}));    // PTX is compiled by the driver
    CHECK(supports("sm_90", {"sm_90a"}));
    CHECK(supports("sm_90", {}));  // unknown: no finding
}

TEST_CASE("two checks compared") {
    auto a = parse_probe(
        "import torch ok 1\nimport flashy failed 0 undefined%20symbol\ndevice H100\ncudnn 91002\n"
        "capability sm_90\ncontext-bytes 536870912\nmatmul-tflops 700\n");
    auto b = parse_probe(
        "import torch ok 1\nimport flashy ok 0.2\nimport extra ok 0.1\ndevice H100\ncudnn 91300\n"
        "capability sm_90\ncontext-bytes 759169024\nmatmul-tflops 679\n");
    CHECK(ops::compare_checks(a, b) ==
          std::vector<std::string>{"cudnn 91002 → 91300",
                                   "cuda context 512 MiB → 724 MiB (+212 MiB)",
                                   "bf16 matmul 700.0 → 679.0 TFLOP/s (−3.0 %)",
                                   "import flashy fixed", "new modules: extra"});
    CHECK(ops::compare_checks(b, b).empty());
    const auto back = ops::compare_checks(b, a);
    CHECK(std::find(back.begin(), back.end(), "import flashy now fails: undefined symbol") !=
          back.end());
}
