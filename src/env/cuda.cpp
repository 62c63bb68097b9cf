#include "envbox/env/cuda.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <regex>
#include <set>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::env {

std::string CudaLine::str() const {
    return std::to_string(major) + "." + (minor ? std::to_string(*minor) : "x");
}

std::optional<CudaLine> cuda_line_of(const std::string& name, const pep::Version& version) {
    // Two digits of minor at most: a label from a hostile lock never overflows a number.
    static const std::regex local_cu(R"(cu(\d{2})(\d{1,2}))");
    static const std::regex name_suffix(R"(^nvidia-.*-cu(\d{2})$)");
    static const std::regex cupy(R"(^cupy-cuda(\d{2})\d*x?$)");
    static const std::regex jax(R"(^jax-cuda(\d{2})-(plugin|pjrt)$)");
    std::smatch m;
    // torch, torchvision, torchaudio, triton…: the local label says it.
    std::string text = version.str();
    std::string local = text.find('+') == std::string::npos ? "" : text.substr(text.find('+') + 1);
    if (std::regex_match(local, m, local_cu)) return CudaLine{std::stoi(m[1]), std::stoi(m[2])};
    if (std::regex_match(name, m, name_suffix)) return CudaLine{std::stoi(m[1]), std::nullopt};
    if (std::regex_match(name, m, cupy)) return CudaLine{std::stoi(m[1]), std::nullopt};
    if (std::regex_match(name, m, jax)) return CudaLine{std::stoi(m[1]), std::nullopt};
    // Libraries whose version major is the CUDA major (nvidia-cublas 13.0.0.19, cuda-toolkit
    // 13.0.2). Others version independently — cuFFT 12.0, cuSOLVER 12.0 and cuSPARSE 12.6 ship
    // with CUDA 13 — so their versions say nothing about the line (the real cu130 stack has
    // all three) and they are not counted.
    static const std::set<std::string> aligned = {
        "nvidia-cublas",     "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-nvjitlink",
        "nvidia-cuda-cupti", "nvidia-cuda-nvcc",    "nvidia-nvtx",       "nvidia-cuda-cccl",
        "nvidia-nvvm",       "nvidia-cuda-crt",     "cuda-toolkit",      "cuda-bindings",
        "cuda-python",       "cuda-runtime"};
    bool versioned_family = aligned.count(name) > 0;
    if (versioned_family && !version.release().empty()) {
        auto major = version.release()[0];
        if (major == 12 || major == 13) return CudaLine{static_cast<int>(major), std::nullopt};
    }
    return std::nullopt;
}

std::optional<std::string> cuda_incoherence(const std::vector<CudaPackage>& packages,
                                            const std::optional<std::string>& declared) {
    std::map<int, std::vector<const CudaPackage*>> by_major;
    for (const auto& p : packages)
        by_major[p.line.major].push_back(&p);
    auto list = [](const std::vector<const CudaPackage*>& ps) {
        std::string out;
        for (std::size_t i = 0; i < ps.size() && i < 4; ++i)
            out += (i ? ", " : "") + ps[i]->name + " " + ps[i]->version;
        if (ps.size() > 4) out += " and " + std::to_string(ps.size() - 4) + " more";
        return out;
    };
    if (by_major.size() > 1) {
        std::string msg = "the lock mixes CUDA lines:";
        for (const auto& [major, ps] : by_major)
            msg += "\n  CUDA " + std::to_string(major) + ": " + list(ps);
        return msg;
    }
    if (declared && !by_major.empty()) {
        auto dot = declared->find('.');
        int major = std::atoi(declared->substr(0, dot).c_str());
        std::optional<int> minor;
        if (dot != std::string::npos) minor = std::atoi(declared->substr(dot + 1).c_str());
        std::vector<const CudaPackage*> off;
        for (const auto& p : packages)
            if (p.line.major != major || (minor && p.line.minor && *p.line.minor != *minor))
                off.push_back(&p);
        if (!off.empty())
            return "the manifest declares cuda = \"" + *declared + "\" but " + list(off) + " " +
                   (off.size() == 1 ? "is" : "are") + " built for CUDA " + off.front()->line.str();
    }
    return std::nullopt;
}

CudaIdentity cuda_identity(const std::vector<std::pair<std::string, std::string>>& packages) {
    CudaIdentity id;
    std::optional<CudaLine> torch, precise, any;  // torch's label decides, then a minor
    for (const auto& [name, text] : packages) {
        auto version = pep::Version::try_parse(text);
        if (!version) continue;
        if (name == "torch") id.torch = text;
        auto line = cuda_line_of(name, *version);
        if (!line) continue;
        if (name == "torch") torch = line;
        if (line->minor && !precise) precise = line;
        if (!any) any = line;
    }
    // A labelled torch decides alone: `+cpu` is no line, whatever nvidia-*-cu12 stays beside it.
    const bool labelled = id.torch.find('+') != std::string::npos;
    id.line = torch ? torch : labelled ? std::nullopt : precise ? precise : any;
    return id;
}

std::optional<std::string> cuda_change(const CudaIdentity& before, const CudaIdentity& after) {
    if (!before.line) return std::nullopt;
    const std::string torch = !before.torch.empty() && !after.torch.empty()
                                  ? " (torch " + before.torch + " → " + after.torch + ")"
                                  : "";
    if (!after.line) {
        // Only a torch still there, on another label (`+cpu`), moved the environment; one that
        // dropped CUDA altogether left nothing to run on a line.
        if (after.torch.empty() || after.torch == before.torch) return std::nullopt;
        return "CUDA " + before.line->str() + " → none" + torch;
    }
    const CudaLine &a = *before.line, &b = *after.line;
    const bool same = a.major == b.major && (!a.minor || !b.minor || *a.minor == *b.minor);
    if (same) return std::nullopt;
    return "CUDA " + a.str() + " → " + b.str() + torch;
}

namespace {

// NVML through dlopen, so envbox neither links against nor needs the NVIDIA libraries.
std::optional<std::string> nvml_driver_version() {
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::nullopt;
    using Init = int (*)();
    using Version = int (*)(char*, unsigned);
    auto init = reinterpret_cast<Init>(::dlsym(lib, "nvmlInit_v2"));
    auto version = reinterpret_cast<Version>(::dlsym(lib, "nvmlSystemGetDriverVersion"));
    auto shutdown = reinterpret_cast<Init>(::dlsym(lib, "nvmlShutdown"));
    std::optional<std::string> out;
    if (init && version && init() == 0) {
        char buf[96] = {0};
        if (version(buf, sizeof buf) == 0 && buf[0]) out = std::string(buf);
        if (shutdown) shutdown();
    }
    ::dlclose(lib);
    return out;
}

}  // namespace

namespace {

// An NVIDIA driver version as the driver writes it: 2 or 3 dot-separated numbers, the first of
// at most 4 digits ("550.54.15", "580.82", "470.256.02"). Anything else set by the user is a
// mistake to report, not to ignore (a typo would silently mean "no driver" or a wrong one).
std::string checked_driver_override(const std::string& v) {
    static const std::regex driver(R"(([1-9][0-9]{0,3})(\.[0-9]{1,4}){1,2})");
    if (!std::regex_match(v, driver))
        throw Error(ErrorCode::usage,
                    "ENVBOX_CUDA_DRIVER='" + v +
                        "' is not an NVIDIA driver version (like 550.54.15); unset it to "
                        "read the installed driver");
    return v;
}

}  // namespace

std::optional<std::string> nvidia_driver_version(const std::string& assumed) {
    if (!assumed.empty()) return checked_driver_override(assumed);
    try {
        std::string s = read_file("/sys/module/nvidia/version");
        while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
            s.pop_back();
        if (!s.empty()) return s;
    } catch (const Error&) {
    }
    if (auto v = nvml_driver_version()) return v;
    try {
        std::string s = read_file("/proc/driver/nvidia/version");
        static const std::regex re(R"(Kernel Module\s+(?:for \S+\s+)?([0-9]+\.[0-9.]+))");
        std::smatch m;
        if (std::regex_search(s, m, re)) return m[1].str();
    } catch (const Error&) {
    }
    return std::nullopt;
}

std::optional<std::string> minimum_driver(int cuda_major) {
    // The one table: what NVIDIA's release notes give as the minimum Linux driver of each line.
    static const std::map<int, std::string> table = {
        {11, "450.80.02"}, {12, "525.60.13"}, {13, "580.65.06"}};
    auto it = table.find(cuda_major);
    if (it == table.end()) return std::nullopt;
    return it->second;
}

std::optional<std::string> driver_refuses(const std::string& driver, const CudaLine& line) {
    auto need = minimum_driver(line.major);
    if (!need) return std::nullopt;
    auto have = pep::Version::try_parse(driver);
    auto want = pep::Version::try_parse(*need);
    if (!have || !want) return std::nullopt;
    // Compare major.minor: 580.x runs cu13 (the .65.06 patch level is advisory here).
    std::vector<std::uint64_t> h = have->release(), w = want->release();
    auto major_minor = [](const std::vector<std::uint64_t>& r) {
        return std::make_pair(r.empty() ? 0 : r[0], r.size() > 1 ? r[1] : 0);
    };
    bool ok = line.major == 13 ? h[0] >= w[0] : major_minor(h) >= major_minor(w);
    if (ok) return std::nullopt;
    return "the NVIDIA driver " + driver + " cannot run CUDA " + line.str() + " (it needs " +
           *need +
           " or newer): update the driver, or use an environment built for an older CUDA line";
}

}  // namespace envbox::env
