#include "store/file_list.hpp"

#include <algorithm>

#include "envbox/pep/digest.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/kv.hpp"

namespace envbox::store {
namespace {

constexpr std::string_view kFilesHeader = "envbox-wheel-files 1";

// The file list is line-based with space-separated fields and each member's path last: a value
// with a line break (or, before the last field, a blank) would change what the list says. What
// the ingest recorded was validated (PEP 508 name, PEP 440 version, safe member paths); this
// refuses anything else rather than write a list that reads back differently.
void require_record_value(std::string_view value, std::string_view what,
                          const std::string& filename, bool blanks_allowed) {
    const bool breaks =
        value.empty() || value.find_first_of(blanks_allowed ? std::string_view("\n\r", 2)
                                                            : std::string_view(" \t\n\r", 4)) !=
                             std::string_view::npos;
    if (breaks)
        throw Error(ErrorCode::integrity, filename + ": " + std::string(what) + " '" +
                                              std::string(value) +
                                              "' cannot be recorded in the store's file list");
}

}  // namespace

// A digest from outside (a lock, a file list, a generation record) before it becomes a path.
void require_digest(std::string_view digest, std::string_view what) {
    if (!pep::is_sha256_hex(digest))
        throw Error(ErrorCode::invalid_input,
                    std::string(what) + " '" + std::string(digest.substr(0, 80)) +
                        "' is not a sha256 digest (64 lowercase hexadecimal digits)");
}

std::string serialise_file_list(const WheelFiles& w) {
    require_record_value(w.filename, "file name", w.filename, false);
    require_record_value(w.name, "Name", w.filename, false);
    require_record_value(w.version, "Version", w.filename, false);
    require_record_value(w.dist_info, ".dist-info directory", w.filename, false);
    for (const auto& f : w.files) {
        require_digest(f.digest, "object digest");
        require_record_value(f.path, "member path", w.filename, true);
    }
    kv::Writer out(kFilesHeader, ' ', w.filename);
    out.add("wheel", w.filename)
        .add("name", w.name)
        .add("version", w.version)
        .add("dist-info", w.dist_info)
        .add("root-is-purelib", w.root_is_purelib ? "1" : "0")
        .add("files", std::to_string(w.files.size()));
    std::string line;
    for (const auto& f : w.files) {
        line.assign(f.digest).append(f.executable ? " x " : " - ");
        line.append(std::to_string(f.size)).append(" ").append(f.path);
        out.line(line);
    }
    return std::move(out).take();
}

namespace {

// The header lines of a file list, in their order; false when one is missing or out of place.
bool read_file_list_header(kv::Reader& r, WheelFiles& w, std::string& purelib, std::string& files) {
    auto head = r.next();
    if (!head || head->text != kFilesHeader) return false;
    auto field = [&](std::string_view key, std::string& out) {
        auto l = r.next();
        if (!l || !l->has_separator || l->key != key) return false;
        out = std::string(l->value);
        return true;
    };
    return field("wheel", w.filename) && field("name", w.name) && field("version", w.version) &&
           field("dist-info", w.dist_info) && field("root-is-purelib", purelib) &&
           field("files", files);
}

}  // namespace

std::optional<WheelFiles> parse_file_list(const std::string& text, std::string_view sha) {
    kv::Reader r(text, "the file list of wheel " + std::string(sha));
    WheelFiles w;
    w.wheel_sha256 = std::string(sha);
    std::size_t count = 0;
    std::string purelib, files;
    try {
        if (!read_file_list_header(r, w, purelib, files)) return std::nullopt;
    } catch (const Error&) {  // a header line past the reader's bounds: damaged
        return std::nullopt;
    }
    w.root_is_purelib = purelib == "1";
    // The name builds an install path (.data/headers/<name>), the dist-info one is a directory:
    // a list that was planted or written by an older envbox must not smuggle a path in.
    if (!pep::is_valid_name(w.name) || w.dist_info.find('/') != std::string::npos ||
        w.dist_info.starts_with("."))
        return std::nullopt;
    try {
        count = std::stoull(files);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    w.files.reserve(count);
    // The file lines, parsed in place (verify and create read tens of thousands of them).
    std::string_view rest = r.rest();
    while (!rest.empty()) {
        auto nl = rest.find('\n');
        std::string_view l = rest.substr(0, nl);
        rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
        // digest(64) ' ' x|- ' ' size ' ' path
        if (l.size() < 70 || l[64] != ' ' || l[66] != ' ' || !pep::is_sha256_hex(l.substr(0, 64)))
            return std::nullopt;
        WheelFile f;
        f.digest = std::string(l.substr(0, 64));
        f.executable = l[65] == 'x';
        std::size_t i = 67;
        std::uint64_t size = 0;
        while (i < l.size() && l[i] >= '0' && l[i] <= '9')
            size = size * 10 + static_cast<std::uint64_t>(l[i++] - '0');
        if (i == 67 || i >= l.size() || l[i] != ' ') return std::nullopt;
        f.size = size;
        f.path = std::string(l.substr(i + 1));
        w.files.push_back(std::move(f));
    }
    if (w.files.size() != count) return std::nullopt;
    return w;
}

}  // namespace envbox::store
