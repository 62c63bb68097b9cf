// Link results kept for the next create of the same wheels (ops/link.hpp): `cache/link/<key>`
// (`envbox-link-result 1`), the key a digest of everything the check reads that a store
// object does not fix, and the host's files it read listed with their size and mtime, so a
// changed system library or interpreter makes the result stale:
//   native N
//   host PATH SIZE MTIME_NS
//   finding KIND PACKAGE WHEEL FILE WHAT MESSAGE      (each field percent-encoded)
#include <sys/stat.h>

#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"
#include "link.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

constexpr std::string_view kLinkHeader = "envbox-link-result 1";
constexpr std::size_t kMaxLinkResult = 64u << 20;

std::optional<std::string> link_host_stamp(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return std::to_string(st.st_size) + " " +
           std::to_string(st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec);
}

std::optional<env::LinkFinding::Kind> link_kind_of(std::string_view name) {
    using K = env::LinkFinding::Kind;
    for (K k : {K::not_found, K::cuda_line, K::missing_symbol, K::unresolved, K::unreadable}) {
        env::LinkFinding f;
        f.kind = k;
        if (name == f.kind_name()) return k;
    }
    return std::nullopt;
}

std::string link_field(std::string_view v, const kv::Reader& r) {
    auto out = kv::percent_decode(v);
    if (!out) throw r.error("malformed field");
    return *out;
}

}  // namespace

// The rules' version: a change to what the check reads or decides bumps it, so no result of
// older rules is used (a refusal they made, a finding they missed).
constexpr std::string_view kLinkRules = "envbox-link-rules 2";

fs::path link_cache_file(const fs::path& home, const std::string& key_text) {
    return store::Home(home).cache() / "link" /
           to_hex(sha256(std::string(kLinkRules) + "\n" + key_text));
}

std::optional<LinkReport> read_link_cache(const fs::path& home, const fs::path& file) {
    try {
        UniqueFd dir = open_own_dir_at_path(home, file.parent_path());
        if (!dir) return std::nullopt;
        auto text = read_own_file(dir.get(), file, kMaxLinkResult);
        if (!text) return std::nullopt;
        kv::Reader r(*text, file.string());
        auto head = r.next();
        if (!head || head->text != kLinkHeader) return std::nullopt;
        LinkReport out;
        while (auto l = r.next()) {
            const auto f = kv::split_fields(l->value);
            if (l->key == "native" && f.size() == 1) {
                out.native_files = std::stoull(std::string(f[0]));
            } else if (l->key == "host" && f.size() == 3) {
                const std::string path = link_field(f[0], r);
                if (link_host_stamp(path) != std::string(f[1]) + " " + std::string(f[2]))
                    return std::nullopt;  // the host changed: link again
                out.host_files.push_back(path);
            } else if (l->key == "finding" && f.size() == 6) {
                env::LinkFinding x;
                auto kind = link_kind_of(f[0]);
                if (!kind) return std::nullopt;
                x.kind = *kind;
                x.package = link_field(f[1], r), x.wheel = link_field(f[2], r),
                x.file = link_field(f[3], r);
                x.what = link_field(f[4], r), x.message = link_field(f[5], r);
                out.findings.push_back(std::move(x));
            } else {
                return std::nullopt;
            }
        }
        out.cached = true;
        return out;
    } catch (const Error&) {
        return std::nullopt;  // damaged or planted: linked again, and written anew
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

void write_link_cache(const fs::path& home, const fs::path& file, const LinkReport& report) {
    kv::Writer w(kLinkHeader);
    w.add("native", std::to_string(report.native_files));
    for (const auto& path : report.host_files) {
        auto stamp = link_host_stamp(path);
        if (!stamp) return;  // gone already: nothing worth keeping
        w.line("host " + kv::percent_encode(path) + " " + *stamp);
    }
    for (const auto& f : report.findings)
        w.add_fields("finding", {f.kind_name(), kv::percent_encode(f.package),
                                 kv::percent_encode(f.wheel), kv::percent_encode(f.file),
                                 kv::percent_encode(f.what), kv::percent_encode(f.message)});
    make_own_dir_at_path(home, file.parent_path());
    require_no_link_below(home, file, /*is_file=*/true);
    write_file_atomic(file, std::move(w).take(), 0644, Durability::none);
}

}  // namespace envbox::ops
