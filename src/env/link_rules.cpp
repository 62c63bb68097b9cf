// The link check's tables and host facts (env/link_check.hpp): which CUDA lines ship which
// library major, the loader's default folders, and demangling for messages.
#include <cxxabi.h>
#include <glob.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "envbox/env/link_check.hpp"

namespace fs = std::filesystem;

namespace envbox::env {

std::optional<std::vector<int>> cuda_lines_of_library(const std::string& soname) {
    // Family → the library major each CUDA toolkit line ships, read from NVIDIA's wheels
    // (nvidia-*-cu11/-cu12/-cu13 and the cu13 `nvidia-*` 13.x wheels torch 2.11+cu130 pins):
    // the majors are each library's own, not CUDA's (cuFFT 12.x ships with CUDA 13).
    static const std::map<std::string, std::map<int, std::vector<int>>> table = {
        {"cudart", {{11, {11}}, {12, {12}}, {13, {13}}}},
        {"cublas", {{11, {11}}, {12, {12}}, {13, {13}}}},
        {"cublasLt", {{11, {11}}, {12, {12}}, {13, {13}}}},
        {"nvrtc", {{11, {11}}, {12, {12}}, {13, {13}}}},
        {"nvJitLink", {{12, {12}}, {13, {13}}}},
        {"cupti", {{11, {11}}, {12, {12}}, {13, {13}}}},
        {"cufft", {{10, {11}}, {11, {12}}, {12, {13}}}},
        {"cufftw", {{10, {11}}, {11, {12}}, {12, {13}}}},
        {"curand", {{10, {11, 12, 13}}}},
        {"cusolver", {{11, {11, 12}}, {12, {13}}}},
        {"cusolverMg", {{11, {11, 12}}, {12, {13}}}},
        {"cusparse", {{11, {11}}, {12, {12, 13}}}},
    };
    if (!soname.starts_with("lib")) return std::nullopt;
    const std::size_t so = soname.find(".so.");
    if (so == std::string::npos) return std::nullopt;
    auto family = table.find(soname.substr(3, so - 3));
    if (family == table.end()) return std::nullopt;
    const std::string rest = soname.substr(so + 4);
    const std::size_t digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || rest.empty() || (digits == std::string::npos ? rest.size() : digits) > 4)
        return std::nullopt;
    const int major = std::stoi(rest.substr(0, digits));
    auto lines = family->second.find(major);
    if (lines == family->second.end()) return std::vector<int>{};  // a major no line ships
    return lines->second;
}

namespace {

void read_ld_conf(const fs::path& file, std::vector<fs::path>& out, int depth) {
    if (depth > 4) return;
    std::ifstream in(file);
    std::string line;
    for (int n = 0; n < 10000 && std::getline(in, line); ++n) {
        line = line.substr(0, line.find('#'));
        const auto start = line.find_first_not_of(" \t"), end = line.find_last_not_of(" \t\r");
        if (start == std::string::npos) continue;
        line = line.substr(start, end - start + 1);
        if (line.starts_with("include")) {
            std::string pattern = line.substr(7);
            pattern = pattern.substr(std::min(pattern.size(), pattern.find_first_not_of(" \t")));
            if (!pattern.empty() && pattern[0] != '/')
                pattern = (file.parent_path() / pattern).string();
            glob_t g{};
            if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
                for (std::size_t i = 0; i < g.gl_pathc && i < 1000; ++i)
                    read_ld_conf(g.gl_pathv[i], out, depth + 1);
            ::globfree(&g);
        } else if (line[0] == '/') {
            out.emplace_back(line);
        }
    }
}

}  // namespace

std::vector<fs::path> system_library_dirs() {
    std::vector<fs::path> dirs;
    read_ld_conf("/etc/ld.so.conf", dirs, 0);
    for (const char* d :
         {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
          "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"})
        dirs.emplace_back(d);
    std::vector<fs::path> out;
    std::set<fs::path> seen;
    std::error_code ec;
    for (auto& d : dirs)
        if (fs::is_directory(d, ec) && seen.insert(d).second) out.push_back(d);
    return out;
}

std::string demangle(const std::string& symbol) {
    if (!symbol.starts_with("_Z") || symbol.size() > 4096) return symbol;
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(
        abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : symbol;
}

const char* LinkFinding::kind_name() const {
    switch (kind) {
        case Kind::not_found:
            return "not-found";
        case Kind::cuda_line:
            return "cuda-line";
        case Kind::missing_symbol:
            return "missing-symbol";
        case Kind::unresolved:
            return "unresolved";
        case Kind::unreadable:
            return "unreadable";
    }
    return "unknown";
}

}  // namespace envbox::env
