#include <catch2/catch.hpp>
#include <cstdlib>

#include "envbox/env/cuda.hpp"
#include "envbox/util/error.hpp"

using envbox::env::cuda_line_of;
using envbox::pep::Version;

namespace {
std::string line(const char* name, const char* version) {
    auto l = cuda_line_of(name, Version::parse(version).value());
    return l ? l->str() : "-";
}
}  // namespace

TEST_CASE("the CUDA line of a package comes from its local label, its name or its version") {
    CHECK(line("torch", "2.11.0+cu128") == "12.8");
    CHECK(line("torch", "2.11.0+cu130") == "13.0");
    CHECK(line("torchvision", "0.26.0+cu121") == "12.1");
    CHECK(line("torch", "2.11.0+cpu") == "-");
    CHECK(line("torch", "2.11.0") == "-");
    CHECK(line("nvidia-cublas-cu12", "12.8.4.1") == "12.x");
    CHECK(line("nvidia-cudnn-cu13", "9.13.0.50") == "13.x");
    CHECK(line("nvidia-cublas", "13.0.0.19") == "13.x");
    CHECK(line("cuda-toolkit", "13.0.1") == "13.x");
    CHECK(line("cupy-cuda12x", "13.6.0") == "12.x");
    CHECK(line("jax-cuda12-plugin", "0.7.2") == "12.x");
    CHECK(line("nvidia-ml-py", "13.580.82") == "-");
    // Versioned on their own: cuFFT 12.0, cuSOLVER 12.0 and cuSPARSE 12.6 ship with CUDA 13.
    CHECK(line("nvidia-cufft", "12.0.0.61") == "-");
    CHECK(line("nvidia-cusolver", "12.0.4.66") == "-");
    CHECK(line("nvidia-cusparse", "12.6.3.3") == "-");
    CHECK(line("cuda-bindings", "13.3.1") == "13.x");
    CHECK(line("requests", "2.32.5") == "-");
}

TEST_CASE("one lock, one CUDA line, and the manifest's") {
    using envbox::env::CudaPackage;
    std::vector<CudaPackage> cu128 = {{"torch", "2.11.0+cu128", {12, 8}},
                                      {"nvidia-cublas-cu12", "12.8.4.1", {12, {}}}};
    CHECK_FALSE(envbox::env::cuda_incoherence(cu128, std::string("12.8")));
    CHECK_FALSE(envbox::env::cuda_incoherence(cu128, std::nullopt));
    auto mixed = cu128;
    mixed.push_back({"nvidia-cublas", "13.0.0.19", {13, {}}});
    auto why = envbox::env::cuda_incoherence(mixed, std::nullopt);
    REQUIRE(why);
    CHECK_THAT(*why, Catch::Contains("CUDA 12: torch 2.11.0+cu128") &&
                         Catch::Contains("CUDA 13: nvidia-cublas 13.0.0.19"));
    auto declared = envbox::env::cuda_incoherence(cu128, std::string("12.6"));
    REQUIRE(declared);
    CHECK_THAT(*declared, Catch::Contains("torch 2.11.0+cu128"));
}

TEST_CASE("an environment's CUDA line changes only when a line or torch's label does") {
    using envbox::env::cuda_change;
    using envbox::env::cuda_identity;
    using Locked = std::vector<std::pair<std::string, std::string>>;
    const auto cu128 = cuda_identity(
        Locked{{"nvidia-cublas-cu12", "12.8.4.1"}, {"torch", "2.11.0+cu128"}, {"numpy", "2.3.3"}});
    REQUIRE(cu128.line);
    CHECK(cu128.line->str() == "12.8");  // torch's label, not cublas' 12.x
    CHECK(cu128.torch == "2.11.0+cu128");
    const auto cu130 =
        cuda_identity(Locked{{"torch", "2.10.0+cu130"}, {"nvidia-cublas", "13.0.0.19"}});
    CHECK(cuda_change(cu128, cu130).value_or("") ==
          "CUDA 12.8 → 13.0 (torch 2.11.0+cu128 → 2.10.0+cu130)");
    CHECK(cuda_change(cu128, cuda_identity(Locked{{"torch", "2.11.1+cu129"}})).value_or("") ==
          "CUDA 12.8 → 12.9 (torch 2.11.0+cu128 → 2.11.1+cu129)");
    CHECK(cuda_change(cu128, cuda_identity(Locked{{"torch", "2.11.0+cpu"}})).value_or("") ==
          "CUDA 12.8 → none (torch 2.11.0+cu128 → 2.11.0+cpu)");
    // torch's label decides even when a CUDA 12 package stays beside a CPU torch.
    CHECK(cuda_change(
              cu128, cuda_identity(Locked{{"torch", "2.11.0+cpu"}, {"nvidia-nccl-cu12", "2.27.3"}}))
              .value_or("") == "CUDA 12.8 → none (torch 2.11.0+cu128 → 2.11.0+cpu)");
    // An unlabelled torch (PyPI's) takes its line from its CUDA packages.
    CHECK(cuda_identity(Locked{{"torch", "2.11.0"}, {"nvidia-cublas-cu12", "12.8.4.1"}})
              .line.value_or(envbox::env::CudaLine{})
              .major == 12);
    // A hostile label is no line, not an overflow.
    CHECK_FALSE(cuda_identity(Locked{{"torch", "2.11.0+cu1299999999999999"}}).line);
    // Not a change: the same line at another version, a line less precise, a first line, and
    // torch and CUDA gone altogether.
    CHECK_FALSE(cuda_change(cu128, cuda_identity(Locked{{"torch", "2.12.0+cu128"}})));
    CHECK_FALSE(cuda_change(cu128, cuda_identity(Locked{{"nvidia-cublas-cu12", "12.9.1.4"}})));
    CHECK_FALSE(cuda_change(cuda_identity(Locked{{"numpy", "2.3.3"}}), cu130));
    CHECK_FALSE(cuda_change(cu128, cuda_identity(Locked{{"numpy", "2.3.3"}})));
    CHECK_FALSE(cuda_change(cu128, cuda_identity(Locked{{"torch", "not a version"}})));
}

TEST_CASE("driver minimums: cu13x needs 580, cu12x 525.60.13") {
    using envbox::env::driver_refuses;
    CHECK(driver_refuses("550.54.15", {13, 0}));
    CHECK_FALSE(driver_refuses("580.82.07", {13, 0}));
    CHECK_FALSE(driver_refuses("550.54.15", {12, 8}));
    CHECK(driver_refuses("520.61.05", {12, 8}));
    CHECK_FALSE(driver_refuses("525.60.13", {12, {}}));
}

TEST_CASE("ENVBOX_CUDA_DRIVER is a driver version or an error naming it") {
    struct Case {
        const char* value;
        bool valid;
    };
    const Case cases[] = {
        {"550.54.15", true},    {"580.82.07", true},
        {"470.256.02", true},   {"570.86", true},
        {"abc", false},         {"550.", false},
        {"-1", false},          {"999999999999.1", false},
        {"550", false},         {" 550.54.15", false},
        {"550.54.15\n", false}, {"550.54.15.1", false},
        {"0550.54", false},     {"550..54", false},
        {"550.54.15-1", false},
    };
    for (const auto& c : cases) {
        INFO(c.value);
        if (c.valid) {
            CHECK(envbox::env::nvidia_driver_version(c.value) ==
                  std::optional<std::string>(c.value));
        } else {
            try {
                (void)envbox::env::nvidia_driver_version(c.value);
                FAIL("accepted");
            } catch (const envbox::Error& e) {
                CHECK(e.code() == envbox::ErrorCode::usage);
                CHECK_THAT(e.message(), Catch::Contains("ENVBOX_CUDA_DRIVER"));
            }
        }
    }
}
