#include "envbox/pep/tags.hpp"

#include <algorithm>
#include <set>

#include "envbox/pep/name.hpp"
#include "pep/text.hpp"

namespace envbox::pep {
namespace {

Error invalid_tag(std::string_view text, std::string_view why) {
    return Error(ErrorCode::invalid_input,
                 "invalid tag '" + quoted_for_error(text) + "': " + std::string(why));
}

bool is_identifier(std::string_view s) {
    if (s.empty() || !(is_ascii_alpha(s[0]) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return is_ascii_alnum(c) || c == '_'; });
}

bool is_component(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return is_ascii_alnum(c) || c == '_'; });
}

std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t end = s.find(sep, start);
        out.emplace_back(s.substr(start, end == std::string_view::npos ? end : end - start));
        if (end == std::string_view::npos) return out;
        start = end + 1;
    }
}

std::string version_nodot(int major, int minor) {
    return std::to_string(major) + std::to_string(minor);
}

// pyXY, pyX, then pyX(Y-1) … pyX0.
std::vector<std::string> py_interpreter_range(const std::vector<int>& v) {
    std::vector<std::string> out;
    if (v.size() > 1) out.push_back("py" + version_nodot(v[0], v[1]));
    out.push_back("py" + std::to_string(v[0]));
    if (v.size() > 1)
        for (int minor = v[1] - 1; minor >= 0; --minor)
            out.push_back("py" + version_nodot(v[0], minor));
    return out;
}

bool is_threaded_abi(const std::vector<std::string>& abis) {
    if (abis.empty()) return false;
    const std::string& a = abis[0];
    if (a.size() < 3 || a.compare(0, 2, "cp") != 0 || !is_ascii_digit(a[2])) return false;
    std::size_t k = 2;
    while (k < a.size() && is_ascii_digit(a[k]))
        ++k;
    return a.find('t', k) != std::string::npos;
}

}  // namespace

Result<std::vector<Tag>> parse_tag(std::string_view text, const TagParseOptions& options) {
    if (options.limit && *options.limit < 0)
        return Error(ErrorCode::invalid_input, "tag limit must not be negative");
    auto parts = split(text, '-');
    if (parts.size() != 3) return invalid_tag(text, "expected interpreter-abi-platform");
    // Counted before anything is built: the product of three sets each as long as the text can
    // wrap past 2^64, and a name of millions of dots must not become millions of strings first.
    std::size_t count = 1;
    bool wrapped = false;
    for (const auto& part : parts) {
        const std::size_t n =
            static_cast<std::size_t>(std::count(part.begin(), part.end(), '.')) + 1;
        wrapped = wrapped || __builtin_mul_overflow(count, n, &count);
    }
    if (options.limit && (wrapped || count > static_cast<std::size_t>(*options.limit)))
        return invalid_tag(text, (wrapped ? std::string("expands to more than 2^64")
                                          : "expands to " + std::to_string(count)) +
                                     " tags, more than the " + std::to_string(*options.limit) +
                                     " allowed");
    std::vector<std::vector<std::string>> sets;
    for (std::size_t p = 0; p < 3; ++p) {
        auto items = split(parts[p], '.');
        for (auto& item : items) {
            if (!(p == 0 ? is_identifier(item) : is_component(item)))
                return invalid_tag(text, "bad component '" + item + "'");
            item = ascii_lower(item);
        }
        if (options.validate_order) {
            for (std::size_t k = 1; k < items.size(); ++k)
                if (!(items[k - 1] < items[k]))
                    return invalid_tag(text, "compressed tag set is not sorted");
        }
        sets.push_back(std::move(items));
    }
    std::set<Tag> out;
    for (const auto& i : sets[0])
        for (const auto& a : sets[1])
            for (const auto& p : sets[2])
                out.insert(Tag{i, a, p});
    return std::vector<Tag>(out.begin(), out.end());
}

std::vector<Tag> cpython_tags(const std::vector<int>& python_version,
                              const std::vector<std::string>& abis_in,
                              const std::vector<std::string>& platforms) {
    std::vector<Tag> out;
    const std::string interpreter = python_version.size() > 1
                                        ? "cp" + version_nodot(python_version[0], python_version[1])
                                        : "cp" + std::to_string(python_version[0]);
    std::vector<std::string> abis;
    for (const auto& a : abis_in)
        if (a != "abi3" && a != "abi3t" && a != "none") abis.push_back(a);
    for (const auto& abi : abis)
        for (const auto& p : platforms)
            out.push_back({interpreter, abi, p});
    const bool threaded = is_threaded_abi(abis);
    const std::string stable_abi = threaded ? "abi3t" : "abi3";
    const bool use_abi3 =
        python_version.size() > 1 &&
        (python_version[0] > 3 || (python_version[0] == 3 && python_version[1] >= 2));
    if (use_abi3)
        for (const auto& p : platforms)
            out.push_back({interpreter, stable_abi, p});
    for (const auto& p : platforms)
        out.push_back({interpreter, "none", p});
    if (use_abi3)
        for (int minor = python_version[1] - 1; minor > 1; --minor)
            for (const auto& p : platforms)
                out.push_back({"cp" + version_nodot(python_version[0], minor), stable_abi, p});
    return out;
}

std::vector<Tag> compatible_tags(const std::vector<int>& python_version,
                                 const std::optional<std::string>& interpreter,
                                 const std::vector<std::string>& platforms) {
    std::vector<Tag> out;
    const auto range = py_interpreter_range(python_version);
    for (const auto& v : range)
        for (const auto& p : platforms)
            out.push_back({v, "none", p});
    if (interpreter) out.push_back({*interpreter, "none", "any"});
    for (const auto& v : range)
        out.push_back({v, "none", "any"});
    return out;
}

std::vector<Tag> generic_tags(const std::string& interpreter, std::vector<std::string> abis,
                              const std::vector<std::string>& platforms) {
    if (std::find(abis.begin(), abis.end(), "none") == abis.end()) abis.push_back("none");
    std::vector<Tag> out;
    for (const auto& a : abis)
        for (const auto& p : platforms)
            out.push_back({interpreter, a, p});
    return out;
}

std::vector<Tag> pure_python_tags(const std::vector<int>& python_version) {
    std::vector<Tag> out;
    for (const auto& v : py_interpreter_range(python_version))
        out.push_back({v, "none", "any"});
    return out;
}

std::vector<std::string> manylinux_platforms(int glibc_major, int glibc_minor,
                                             std::string_view arch) {
    static const std::set<std::string_view> k2014{"x86_64", "i686",    "aarch64", "armv7l",
                                                  "ppc64",  "ppc64le", "s390x"};
    static const std::set<std::string_view> k2010{"x86_64", "i686"};
    const std::string a(arch);
    // glibc 2.17 is the oldest manylinux target for architectures newer than x86 (PEP 599).
    const int lowest = k2010.count(arch) ? 5 : 17;
    std::vector<std::string> out;
    if (glibc_major != 2) return out;
    for (int minor = glibc_minor; minor >= lowest; --minor) {
        out.push_back("manylinux_2_" + std::to_string(minor) + "_" + a);
        if (minor == 17 && k2014.count(arch)) out.push_back("manylinux2014_" + a);
        if (minor == 12 && k2010.count(arch)) out.push_back("manylinux2010_" + a);
        if (minor == 5 && k2010.count(arch)) out.push_back("manylinux1_" + a);
    }
    return out;
}

// The largest major or minor libc version a platform tag may name.
constexpr std::uint64_t kMaxLibcVersionPart = 999;

Result<std::vector<std::string>> target_platforms(std::string_view tag) {
    auto bad = [&](std::string_view why) {
        return Error(ErrorCode::invalid_input,
                     "unsupported target platform '" + std::string(tag) + "': " + std::string(why));
    };
    auto parse_xy_arch = [](std::string_view rest, int& x, int& y, std::string& arch) {
        std::size_t i = 0;
        std::uint64_t a = 0, b = 0;
        if (!parse_u64(rest, i, a) || i >= rest.size() || rest[i] != '_') return false;
        ++i;
        if (!parse_u64(rest, i, b) || i >= rest.size() || rest[i] != '_') return false;
        arch = std::string(rest.substr(i + 1));
        // Each minor version below the target's is a platform tag of its own: a hostile
        // manifest's `manylinux_2_1726484_x86_64` would make millions. Real versions are two
        // or three digits (glibc 2.39, musl 1.2).
        if (a > kMaxLibcVersionPart || b > kMaxLibcVersionPart) return false;
        x = static_cast<int>(a);
        y = static_cast<int>(b);
        return !arch.empty();
    };
    int x = 0, y = 0;
    std::string arch;
    std::vector<std::string> out;
    if (tag.rfind("manylinux_", 0) == 0) {
        if (!parse_xy_arch(tag.substr(10), x, y, arch))
            return bad("expected manylinux_X_Y_ARCH (X and Y at most 999)");
        out = manylinux_platforms(x, y, arch);
        if (out.empty()) return bad("glibc version below the manylinux range of this architecture");
    } else if (tag.rfind("manylinux2014_", 0) == 0) {
        arch = std::string(tag.substr(14));
        out = manylinux_platforms(2, 17, arch);
    } else if (tag.rfind("manylinux2010_", 0) == 0) {
        arch = std::string(tag.substr(14));
        out = manylinux_platforms(2, 12, arch);
    } else if (tag.rfind("manylinux1_", 0) == 0) {
        arch = std::string(tag.substr(11));
        out = manylinux_platforms(2, 5, arch);
    } else if (tag.rfind("musllinux_", 0) == 0) {
        if (!parse_xy_arch(tag.substr(10), x, y, arch))
            return bad("expected musllinux_X_Y_ARCH (X and Y at most 999)");
        for (int minor = y; minor >= 0; --minor)
            out.push_back("musllinux_" + std::to_string(x) + "_" + std::to_string(minor) + "_" +
                          arch);
    } else if (tag.rfind("linux_", 0) == 0) {
        arch = std::string(tag.substr(6));
    } else {
        return bad("expected a manylinux, musllinux or linux platform tag");
    }
    if (arch.empty() || !is_component(arch)) return bad("bad architecture");
    out.push_back("linux_" + arch);
    return out;
}

TargetTags::TargetTags(std::vector<Tag> ordered) : tags_(std::move(ordered)) {
    for (std::size_t k = 0; k < tags_.size(); ++k)
        rank_.emplace(tags_[k].str(), k);
}

Result<TargetTags> TargetTags::cpython(int major, int minor, std::string_view platform_tag,
                                       bool free_threaded) {
    auto platforms = target_platforms(platform_tag);
    if (!platforms) return platforms.error();
    const std::string nodot = version_nodot(major, minor);
    std::vector<Tag> tags =
        cpython_tags({major, minor}, {"cp" + nodot + (free_threaded ? "t" : "")}, *platforms);
    auto compat = compatible_tags({major, minor}, "cp" + nodot, *platforms);
    tags.insert(tags.end(), compat.begin(), compat.end());
    return TargetTags(std::move(tags));
}

std::optional<std::size_t> TargetTags::rank(const Tag& tag) const {
    auto it = rank_.find(tag.str());
    if (it == rank_.end()) return std::nullopt;
    return it->second;
}

std::optional<std::size_t> TargetTags::best_rank(const std::vector<Tag>& tags) const {
    std::optional<std::size_t> best;
    for (const auto& t : tags)
        if (auto r = rank(t); r && (!best || *r < *best)) best = r;
    return best;
}

}  // namespace envbox::pep
