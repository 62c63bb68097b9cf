// The kept checks of `envbox check` read back and compared (check --compare, history, create's
// and rollback's hints).
#include <cmath>
#include <cstdio>
#include <map>

#include "envbox/ops/check.hpp"
#include "envbox/util/error.hpp"

namespace envbox::ops {
namespace {

using Status = env::ImportResult::Status;

std::string mib(std::uint64_t bytes) {
    return std::to_string((bytes + (1u << 19)) >> 20) + " MiB";
}

// "a → b" for a text that changed; nothing when it did not, or when either is unknown.
void changed(std::vector<std::string>& out, const char* what, const std::string& a,
             const std::string& b) {
    if (!a.empty() && !b.empty() && a != b) out.push_back(std::string(what) + " " + a + " → " + b);
}

void compare_gpu(const env::GpuFigures& a, const env::GpuFigures& b,
                 std::vector<std::string>& out) {
    if (a.none.empty() != b.none.empty()) {
        out.push_back("GPU figures: " + (a.none.empty() ? a.device : "none (" + a.none + ")") +
                      " → " + (b.none.empty() ? b.device : "none (" + b.none + ")"));
        return;
    }
    changed(out, "device", a.device, b.device);
    changed(out, "torch", a.torch, b.torch);
    changed(out, "torch's CUDA", a.cuda, b.cuda);
    changed(out, "cudnn", a.cudnn, b.cudnn);
    changed(out, "nccl", a.nccl, b.nccl);
    if (a.arch_supported() != b.arch_supported())
        out.push_back(b.arch_supported() ? "the device is among torch's architectures again"
                                         : "the device is no longer among torch's architectures");
    if (a.failed.empty() != b.failed.empty())
        out.push_back(b.failed.empty() ? "the GPU measurement works again" : b.failed);
    if (a.context_bytes && b.context_bytes) {
        const auto x = static_cast<long long>((*a.context_bytes + (1u << 19)) >> 20),
                   y = static_cast<long long>((*b.context_bytes + (1u << 19)) >> 20);
        if (std::llabs(y - x) >= 2)
            out.push_back("cuda context " + mib(*a.context_bytes) + " → " + mib(*b.context_bytes) +
                          " (" + (y > x ? "+" : "−") + std::to_string(std::llabs(y - x)) + " MiB)");
    }
    if (a.matmul_tflops && b.matmul_tflops && *a.matmul_tflops > 0) {
        const double pct = (*b.matmul_tflops - *a.matmul_tflops) / *a.matmul_tflops * 100;
        if (std::fabs(pct) >= 2) {
            char line[160];
            std::snprintf(line, sizeof line, "bf16 matmul %.1f → %.1f TFLOP/s (%s%.1f %%)",
                          *a.matmul_tflops, *b.matmul_tflops, pct > 0 ? "+" : "−", std::fabs(pct));
            out.push_back(line);
        }
    }
}

// Up to ten names, then "and N more".
std::string some(const std::vector<std::string>& names) {
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < 10; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > 10) out += " and " + std::to_string(names.size() - 10) + " more";
    return out;
}

void compare_imports(const env::CheckRecord& a, const env::CheckRecord& b,
                     std::vector<std::string>& out) {
    std::map<std::string, const env::ImportResult*> before;
    for (const auto& i : a.imports)
        before[i.module] = &i;
    std::vector<std::string> added;
    for (const auto& i : b.imports) {
        const auto it = before.find(i.module);
        const bool was_ok = it != before.end() && it->second->status == Status::ok;
        if (it == before.end()) added.push_back(i.module);
        if (i.status != Status::ok && (was_ok || it == before.end()))
            out.push_back("import " + i.module + " now fails: " + i.message);
        else if (i.status == Status::ok && it != before.end() && !was_ok)
            out.push_back("import " + i.module + " fixed");
        if (it != before.end()) before.erase(it);
    }
    std::vector<std::string> gone;
    for (const auto& [module, _] : before)
        gone.push_back(module);
    if (!added.empty()) out.push_back("new modules: " + some(added));
    if (!gone.empty()) out.push_back("modules gone: " + some(gone));
}

}  // namespace

std::vector<std::string> compare_checks(const env::CheckRecord& before,
                                        const env::CheckRecord& after) {
    std::vector<std::string> out;
    changed(out, "python", before.python, after.python);
    compare_gpu(before.gpu, after.gpu, out);
    compare_imports(before, after, out);
    return out;
}

env::CheckRecord kept_check(const Context& ctx, const std::string& env, int generation) {
    auto record = env::read_check_record(env_dir(ctx, env), generation);
    if (!record)
        throw Error(ErrorCode::usage, "generation " + std::to_string(generation) + " of " + env +
                                          " was never checked; `envbox check " + env +
                                          " --generation " + std::to_string(generation) +
                                          "` checks it, if it still exists");
    return *record;
}

std::optional<int> last_clean_check(const Context& ctx, const std::string& env,
                                    std::optional<int> except) {
    const auto records = env::read_check_records(env_dir(ctx, env));
    for (auto it = records.rbegin(); it != records.rend(); ++it)
        if (it->generation != except && it->findings().empty()) return it->generation;
    return std::nullopt;
}

std::optional<int> newest_check_before(const Context& ctx, const std::string& env, int below) {
    try {
        const auto records = env::read_check_records(env_dir(ctx, env));
        for (auto it = records.rbegin(); it != records.rend(); ++it)
            if (it->generation < below) return it->generation;
    } catch (const Error&) {
    }
    return std::nullopt;
}

}  // namespace envbox::ops
