#include "cli/diff_render.hpp"

#include <cstdio>
#include <sstream>

#include "envbox/pep/filename.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/printable.hpp"

namespace envbox::cli {
namespace {

using ops::Diff;
using ops::DiffEntry;

std::string signed_bytes(std::int64_t n) {
    const char* units[] = {"B", "kB", "MB", "GB"};
    double v = static_cast<double>(n < 0 ? -n : n);
    int u = 0;
    while (v >= 1000 && u < 3)
        v /= 1000, ++u;
    char buf[48];
    std::snprintf(buf, sizeof buf, u ? "%s%.1f %s" : "%s%.0f %s", n < 0 ? "-" : "+", v, units[u]);
    return buf;
}

const char* kind_word(DiffEntry::Kind k) {
    switch (k) {
        case DiffEntry::Kind::added:
            return "added";
        case DiffEntry::Kind::removed:
            return "removed";
        case DiffEntry::Kind::upgraded:
            return "upgraded";
        case DiffEntry::Kind::downgraded:
            return "downgraded";
        case DiffEntry::Kind::local_label:
            return "local label changed";
        case DiffEntry::Kind::index_changed:
            return "index changed";
        case DiffEntry::Kind::wheel_changed:
            return "wheel changed";
        case DiffEntry::Kind::rebuilt:
            return "rebuilt";
    }
    return "?";
}

std::string short_digest(const std::string& sha) {
    return sha.empty() ? "—" : sha.substr(0, 12) + "…";
}

// "rebuilt: same version, new sha256 and size" for the text and markdown reports.
std::string change_words(const DiffEntry& e) {
    return e.detail.empty() ? kind_word(e.kind) : std::string(kind_word(e.kind)) + ": " + e.detail;
}

}  // namespace

std::string render_text(const Diff& d, bool color) {
    std::ostringstream o;
    auto paint = [&](const char* code, const std::string& s) {
        return color ? std::string("\033[") + code + "m" + s + "\033[0m" : s;
    };
    // Every value comes from a lock (or names one): shown with its hidden characters escaped,
    // so no escape sequence or bidi override in it can redraw what the reviewer reads.
    o << printable(d.a) << " → " << printable(d.b) << "\n";
    if (d.entries.empty()) o << "  no changes (" << d.unchanged << " packages)\n";
    for (const auto& e : d.entries) {
        const std::string name = printable(e.name), before = printable(e.before),
                          after = printable(e.after);
        std::string line;
        switch (e.kind) {
            case DiffEntry::Kind::added:
                line = paint("32", "+ " + name + " " + after);
                break;
            case DiffEntry::Kind::removed:
                line = paint("31", "- " + name + " " + before);
                break;
            case DiffEntry::Kind::wheel_changed:
                line = paint("33", "~ " + name + " " + after) + " (" + printable(change_words(e)) +
                       ")";
                break;
            case DiffEntry::Kind::rebuilt:
                line = paint("1;33", "~ " + name + " " + after) + " (" +
                       printable(change_words(e)) + ")  sha256 " +
                       printable(short_digest(e.sha256_before)) + " → " +
                       printable(short_digest(e.sha256_after));
                break;
            default:
                line = paint("33", "~ " + name + " " + before + " → " + after) + " (" +
                       kind_word(e.kind) + ")";
        }
        if (!e.cuda_before.empty() && !e.cuda_after.empty() && e.cuda_before != e.cuda_after)
            line += paint("1;35",
                          "  CUDA " + printable(e.cuda_before) + " → " + printable(e.cuda_after));
        if (e.index_before != e.index_after && !e.index_before.empty() && !e.index_after.empty())
            line += "  index " + printable(e.index_before) + " → " + printable(e.index_after);
        o << "  " << line << "\n";
    }
    o << "download size " << signed_bytes(d.download_delta);
    if (d.installed_delta) o << ", installed size " << signed_bytes(*d.installed_delta);
    o << "; " << d.entries.size() << " changed, " << d.unchanged << " unchanged\n";
    return o.str();
}

std::string render_markdown(const Diff& d) {
    // A value in a table cell: hidden characters escaped, and `|`, which would end the cell.
    auto cell = [](const std::string& s) {
        std::string out;
        for (char c : printable(s))
            out += c == '|' ? std::string("\\|") : std::string(1, c);
        return out;
    };
    std::ostringstream o;
    o << "**" << cell(d.a) << " → " << cell(d.b) << "**: " << d.entries.size() << " changed, "
      << d.unchanged << " unchanged, download size " << signed_bytes(d.download_delta);
    if (d.installed_delta) o << ", installed size " << signed_bytes(*d.installed_delta);
    o << "\n\n| package | before | after | change | CUDA | download |\n|---|---|---|---|---|---|\n";
    for (const auto& e : d.entries) {
        std::string cuda =
            (!e.cuda_before.empty() || !e.cuda_after.empty()) && e.cuda_before != e.cuda_after
                ? "**" + (e.cuda_before.empty() ? "—" : cell(e.cuda_before)) + " → " +
                      (e.cuda_after.empty() ? "—" : cell(e.cuda_after)) + "**"
                : "";
        o << "| `" << cell(e.name) << "` | " << (e.before.empty() ? "—" : cell(e.before)) << " | "
          << (e.after.empty() ? "—" : cell(e.after)) << " | " << cell(change_words(e))
          << (e.kind == DiffEntry::Kind::rebuilt
                  ? " (`" + cell(short_digest(e.sha256_before)) + "` → `" +
                        cell(short_digest(e.sha256_after)) + "`)"
                  : "")
          << " | " << cuda << " | " << signed_bytes(e.download_delta) << " |\n";
    }
    return o.str();
}

std::string render_json(const Diff& d) {
    // An empty field is null, except the indexes: "" is a lock's own "no index".
    auto or_null = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
    Json changes = Json::array();
    for (const auto& e : d.entries)
        changes.push_back(Json{{"name", e.name},
                               {"kind", kind_word(e.kind)},
                               {"before", or_null(e.before)},
                               {"after", or_null(e.after)},
                               {"detail", or_null(e.detail)},
                               {"wheel_before", or_null(e.wheel_before)},
                               {"wheel_after", or_null(e.wheel_after)},
                               {"sha256_before", or_null(e.sha256_before)},
                               {"sha256_after", or_null(e.sha256_after)},
                               {"index_before", e.index_before},
                               {"index_after", e.index_after},
                               {"cuda_before", or_null(e.cuda_before)},
                               {"cuda_after", or_null(e.cuda_after)},
                               {"download_delta", e.download_delta}});
    Json report = {{"a", d.a},
                   {"b", d.b},
                   {"unchanged", d.unchanged},
                   {"download_delta", d.download_delta},
                   {"installed_delta", d.installed_delta ? Json(*d.installed_delta) : Json()},
                   {"changes", std::move(changes)}};
    return json_line(report) + "\n";
}

std::string render_textconv(const ops::LockView& v) {
    std::ostringstream o;
    // One line per package, whatever its values hold: each is shown with hidden characters
    // escaped (a line break would fake a package; an escape sequence would redraw the line).
    for (const auto& e : v.packages) {
        o << printable(e.name) << "==" << printable(e.version);
        if (auto c = ops::cuda_line(e.name, e.version); !c.empty()) o << "  [CUDA " << c << "]";
        if (!e.index.empty()) o << "  (" << printable(e.index) << ")";
        if (auto w = pep::WheelFilename::parse(e.filename)) o << "  " << printable(w->tag_text);
        if (e.size) o << "  " << *e.size << " bytes";
        if (!e.sha256.empty()) o << "  sha256=" << printable(e.sha256);
        o << "\n";
    }
    return o.str();
}

}  // namespace envbox::cli
