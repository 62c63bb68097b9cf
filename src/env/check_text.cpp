// The text of check records and of the probe (check_record.hpp): read, validated, written.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include "envbox/env/check_record.hpp"
#include "envbox/env/known_good.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/printable.hpp"

namespace envbox::env {
namespace {

constexpr std::string_view kRecordHeader = "envbox-check 1";
constexpr std::string_view kProbeHeader = "envbox-check-probe 1";
// A record holds a line per module: tens of thousands would already be absurd.
constexpr kv::Limits kCheckLimits{.max_line_bytes = 16u << 10, .max_lines = 1u << 17};
constexpr std::size_t kMaxText = 2000;
// Imports in one probe's output or record: the line limit less room for the other lines, so a
// record written from what was read always reads back.
constexpr std::size_t kMaxImports = 100000;

// A number as the probe writes one: finite, 0 or more, at most `max`.
std::optional<double> parse_amount(std::string_view s, double max) {
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0 || v > max)
        return std::nullopt;
    return v;
}

std::optional<std::uint64_t> parse_count(std::string_view s) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v > (1ull << 60))
        return std::nullopt;
    return v;
}

std::string format_amount(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
}

// A percent-encoded text value, decoded, made printable and cut at `kMaxText` bytes (at the
// start of a character: what is kept reads back the same).
std::string text_value(const kv::Reader& r, std::string_view encoded) {
    const auto v = kv::percent_decode(encoded);
    if (!v) throw r.error("malformed %-escape");
    std::string out = printable(v->substr(0, 4 * kMaxText));
    if (out.size() > kMaxText) {
        std::size_t cut = kMaxText;
        while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
            --cut;
        out.resize(cut);
    }
    return out;
}

// "sm_90", "sm_90a", "compute_120": the architectures torch names.
bool is_arch(std::string_view s) {
    const std::string_view digits = s.starts_with("sm_")        ? s.substr(3)
                                    : s.starts_with("compute_") ? s.substr(8)
                                                                : std::string_view();
    if (digits.empty() || digits.size() > 6 || digits[0] < '0' || digits[0] > '9') return false;
    return digits.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyz") ==
           std::string_view::npos;
}

std::optional<int> arch_number(std::string_view s, std::string_view prefix) {
    if (!s.starts_with(prefix)) return std::nullopt;
    int n = 0;
    const char* at = s.data() + prefix.size();
    const auto [end, ec] = std::from_chars(at, s.data() + s.size(), n);
    if (ec != std::errc() || end == at) return std::nullopt;
    return n;
}

ImportResult parse_import(const kv::Reader& r, std::string_view value) {
    const auto f = kv::split_fields(value);
    if (f.size() < 3 || f.size() > 4 || !is_module_name(f[0]))
        throw r.error("malformed import line");
    ImportResult out;
    out.module = std::string(f[0]);
    if (f[1] == "ok") {
        out.status = ImportResult::Status::ok;
    } else if (f[1] == "failed") {
        out.status = ImportResult::Status::failed;
    } else if (f[1] == "timeout") {
        out.status = ImportResult::Status::timeout;
    } else {
        throw r.error("unknown import status '" + printable(f[1].substr(0, 40)) + "'");
    }
    const auto seconds = parse_amount(f[2], 1e7);
    if (!seconds) throw r.error("malformed import time");
    out.seconds = *seconds;
    if (f.size() == 4) out.message = text_value(r, f[3]);
    return out;
}

// The GPU lines; false for a key that is none of them.
bool parse_gpu(const kv::Reader& r, std::string_view key, std::string_view value, GpuFigures& g) {
    if (key == "arch-list") {
        const std::string list = text_value(r, value);
        std::size_t at = 0;
        while (at < list.size() && g.arch_list.size() < 64) {
            const std::size_t end = std::min(list.find(',', at), list.size());
            const std::string arch = list.substr(at, end - at);
            if (!is_arch(arch)) throw r.error("malformed architecture '" + arch + "'");
            g.arch_list.push_back(arch);
            at = end + 1;
        }
    } else if (key == "capability") {
        const std::string cap = text_value(r, value);
        if (!arch_number(cap, "sm_") || !is_arch(cap)) throw r.error("malformed capability");
        g.capability = cap;
    } else if (key == "context-bytes") {
        if (!(g.context_bytes = parse_count(value))) throw r.error("malformed context-bytes");
    } else if (key == "matmul-tflops") {
        if (!(g.matmul_tflops = parse_amount(value, 1e6))) throw r.error("malformed matmul-tflops");
    } else if (key == "gpu-error") {
        if (g.errors.size() < 16) g.errors.push_back(text_value(r, value));
    } else {
        std::string* field = key == "gpu-none"     ? &g.none
                             : key == "gpu-failed" ? &g.failed
                             : key == "torch"      ? &g.torch
                             : key == "cuda"       ? &g.cuda
                             : key == "cudnn"      ? &g.cudnn
                             : key == "nccl"       ? &g.nccl
                             : key == "device"     ? &g.device
                                                   : nullptr;
        if (!field) return false;
        *field = text_value(r, value);
    }
    return true;
}

}  // namespace

bool is_module_name(std::string_view s) {
    if (s.empty() || s.size() > 200) return false;
    bool start = true;
    for (char c : s) {
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        const bool digit = c >= '0' && c <= '9';
        if (c == '.' && !start) {
            start = true;
        } else if (letter || (digit && !start)) {
            start = false;
        } else {
            return false;
        }
    }
    return !start;
}

bool GpuFigures::arch_supported() const {
    const auto cap = arch_number(capability, "sm_");
    if (!cap || arch_list.empty()) return true;
    for (const auto& a : arch_list) {
        // SASS runs on its major line at the same or a higher minor; PTX is compiled for any
        // newer device by the driver.
        if (auto sm = arch_number(a, "sm_"); sm && *sm / 10 == *cap / 10 && *sm <= *cap)
            return true;
        if (auto ptx = arch_number(a, "compute_"); ptx && *ptx <= *cap) return true;
    }
    return false;
}

std::vector<std::string> CheckRecord::findings() const {
    std::vector<std::string> out;
    for (const auto& i : imports) {
        if (i.status == ImportResult::Status::failed)
            out.push_back("import " + i.module + " failed: " + i.message);
        else if (i.status == ImportResult::Status::timeout)
            out.push_back("import " + i.module + " " + i.message);
    }
    if (!gpu.failed.empty()) out.push_back(gpu.failed);
    if (!gpu.arch_supported()) {
        std::string list;
        for (const auto& a : gpu.arch_list)
            list += (list.empty() ? "" : ", ") + a;
        out.push_back(gpu.device + " (" + gpu.capability +
                      ") is not among the architectures torch was built for (" + list + ")");
    }
    return out;
}

CheckRecord parse_check(std::string_view text, const std::string& what, bool probe,
                        const std::vector<std::string>& expected) {
    kv::Reader r(text, what, ' ', kCheckLimits);
    const auto head = r.next();
    const std::string_view header = probe ? kProbeHeader : kRecordHeader;
    if (!head || head->text != header)
        throw r.error("expected the header '" + std::string(header) + "'");
    CheckRecord out;
    const std::set<std::string> wanted(expected.begin(), expected.end());
    std::set<std::string> seen;
    while (auto l = r.next()) {
        const std::string_view key = l->key, value = l->value;
        if (key == "import") {
            ImportResult i = parse_import(r, value);
            if ((!wanted.empty() && !wanted.count(i.module)) || !seen.insert(i.module).second)
                throw r.error("an import of '" + i.module + "' nobody asked for, or twice");
            if (out.imports.size() == kMaxImports) throw r.error("more than 100000 imports");
            out.imports.push_back(std::move(i));
        } else if (key == "python") {
            out.python = text_value(r, value);
        } else if (parse_gpu(r, key, value, out.gpu)) {
        } else if (!probe && key == "generation") {
            const auto n = parse_generation_number(value);
            if (!n) throw r.error("malformed generation number");
            out.generation = *n;
        } else if (!probe && key == "when") {
            if (!valid_timestamp(value)) throw r.error("malformed time");
            out.when = std::string(value);
        } else if (!probe && key == "cache") {
            const auto f = kv::split_fields(value);
            std::optional<std::uint64_t> files, bytes;
            if (f.size() != 3 || !is_module_name(f[0]) || !(files = parse_count(f[1])) ||
                !(bytes = parse_count(f[2])))
                throw r.error("malformed cache line");
            out.caches.push_back({std::string(f[0]), *files, *bytes});
        } else {
            throw r.error("unknown line '" + printable(l->text.substr(0, 60)) + "'");
        }
    }
    if (!probe && (out.generation == 0 || out.when.empty()))
        throw r.error("a check record without its generation or its time");
    return out;
}

std::string check_record_text(const CheckRecord& c) {
    kv::Writer w(kRecordHeader, ' ', "a check record");
    w.add("generation", std::to_string(c.generation)).add("when", c.when);
    w.add("python", kv::percent_encode(c.python));
    for (const auto& i : c.imports) {
        const char* status = i.status == ImportResult::Status::ok       ? "ok"
                             : i.status == ImportResult::Status::failed ? "failed"
                                                                        : "timeout";
        const std::string seconds = format_amount(i.seconds),
                          message = kv::percent_encode(i.message);
        if (i.message.empty())
            w.add_fields("import", {i.module, status, seconds});
        else
            w.add_fields("import", {i.module, status, seconds, message});
    }
    const GpuFigures& g = c.gpu;
    for (const auto& [key, value] :
         {std::pair<const char*, const std::string*>{"gpu-none", &g.none},
          {"gpu-failed", &g.failed},
          {"torch", &g.torch},
          {"cuda", &g.cuda},
          {"cudnn", &g.cudnn},
          {"nccl", &g.nccl},
          {"device", &g.device},
          {"capability", &g.capability}})
        if (!value->empty()) w.add(key, kv::percent_encode(*value));
    std::string archs;
    for (const auto& a : g.arch_list)
        archs += (archs.empty() ? "" : ",") + a;
    if (!archs.empty()) w.add("arch-list", archs);
    if (g.context_bytes) w.add("context-bytes", std::to_string(*g.context_bytes));
    if (g.matmul_tflops) w.add("matmul-tflops", format_amount(*g.matmul_tflops));
    for (const auto& e : g.errors)
        w.add("gpu-error", kv::percent_encode(e));
    for (const auto& u : c.caches)
        w.add_fields("cache", {u.variable, std::to_string(u.files), std::to_string(u.bytes)});
    return std::move(w).take();
}

}  // namespace envbox::env
