// Micro-benchmarks of the pep layer's resolver hot paths: version parse, compare, and
// specifier-set membership. Results: bench/README.md.

#include <benchmark/benchmark.h>

#include <vector>

#include "envbox/pep/specifier.hpp"
#include "envbox/pep/version.hpp"

using namespace envbox::pep;

namespace {

const std::vector<std::string> kVersions = {
    "2.11.0+cu128", "2.11.0", "1.26.4", "4.56.0.dev0", "12.8.4.1",
    "0.21.0rc1",    "2024.1", "3.12.8", "1!2.0.post3", "2.11.0+cu130",
};

void BM_VersionParse(benchmark::State& state) {
    std::size_t k = 0;
    for (auto _ : state) {
        auto v = Version::try_parse(kVersions[k++ % kVersions.size()]);
        benchmark::DoNotOptimize(v);
    }
}
BENCHMARK(BM_VersionParse);

void BM_VersionCompare(benchmark::State& state) {
    std::vector<Version> vs;
    for (const auto& s : kVersions)
        vs.push_back(*Version::parse(s));
    std::size_t k = 0;
    for (auto _ : state) {
        const auto& a = vs[k % vs.size()];
        const auto& b = vs[(k * 7 + 3) % vs.size()];
        ++k;
        benchmark::DoNotOptimize(a < b);
    }
}
BENCHMARK(BM_VersionCompare);

void BM_SpecifierSetContains(benchmark::State& state) {
    auto set = *SpecifierSet::parse(">=2.4,<3,!=2.5.1");
    auto torch = *SpecifierSet::parse("==2.11.0");
    std::vector<Version> vs;
    for (const auto& s : kVersions)
        vs.push_back(*Version::parse(s));
    std::size_t k = 0;
    for (auto _ : state) {
        const auto& v = vs[k++ % vs.size()];
        benchmark::DoNotOptimize(set.contains(v));
        benchmark::DoNotOptimize(torch.contains(v));
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 2);
}
BENCHMARK(BM_SpecifierSetContains);

void BM_SpecifierSetParse(benchmark::State& state) {
    for (auto _ : state) {
        auto s = SpecifierSet::parse(">=4.56,<5,!=4.57.1");
        benchmark::DoNotOptimize(s);
    }
}
BENCHMARK(BM_SpecifierSetParse);

}  // namespace

BENCHMARK_MAIN();
