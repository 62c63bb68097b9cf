#include "envbox/pep/wheel.hpp"

#include <algorithm>
#include <regex>

#include "envbox/pep/metadata.hpp"
#include "envbox/pep/name.hpp"
#include "pep/text.hpp"

namespace envbox::pep {
namespace {

Error record_error(std::size_t line, std::string_view what) {
    return Error(ErrorCode::integrity,
                 "RECORD line " + std::to_string(line) + ": " + std::string(what));
}

bool is_word_byte(char c) {
    // Python's \w is Unicode-aware: any non-ASCII byte of a UTF-8 sequence counts as a word
    // character here (entry points like `進入點 = 套件.模組:函式` are valid).
    return is_ascii_alnum(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}

bool is_dotted_name(std::string_view s) {
    if (s.empty() || s.front() == '.' || s.back() == '.') return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return is_word_byte(c) || c == '.'; });
}

}  // namespace

Result<std::vector<RecordRow>> parse_record(std::string_view text) {
    std::vector<RecordRow> rows;
    std::size_t i = 0, line = 1;
    while (i < text.size()) {
        std::size_t row_line = line;
        std::vector<std::string> fields(1);
        bool quoted = false, at_field_start = true;
        for (; i < text.size(); ++i) {
            char c = text[i];
            if (quoted) {
                if (c == '"') {
                    if (i + 1 < text.size() && text[i + 1] == '"') {
                        fields.back() += '"';
                        ++i;
                    } else {
                        quoted = false;
                    }
                } else {
                    if (c == '\n') ++line;
                    fields.back() += c;
                }
                continue;
            }
            if (c == '"' && at_field_start) {
                quoted = true;
                at_field_start = false;
            } else if (c == ',') {
                fields.emplace_back();
                at_field_start = true;
            } else if (c == '\n' || c == '\r') {
                if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
                ++i;
                ++line;
                break;
            } else {
                fields.back() += c;
                at_field_start = false;
            }
        }
        if (quoted) return record_error(row_line, "unterminated quoted field");
        if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
        if (fields.size() != 3)
            return record_error(row_line, "expected 3 fields (path, hash, size), found " +
                                              std::to_string(fields.size()));
        RecordRow row{std::move(fields[0]), std::move(fields[1]), std::move(fields[2])};
        std::replace(row.path.begin(), row.path.end(), '\\', '/');
        if (auto err = validate_record_row(row)) return record_error(row_line, err->message());
        rows.push_back(std::move(row));
    }
    return rows;
}

std::optional<Error> validate_record_row(const RecordRow& row) {
    std::vector<std::string> problems;
    if (row.path.empty()) problems.push_back("empty path");
    if (!row.hash.empty()) {
        auto eq = row.hash.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == row.hash.size())
            problems.push_back("hash '" + row.hash + "' is not algorithm=value");
    }
    if (!row.size.empty() &&
        !std::all_of(row.size.begin(), row.size.end(), [](char c) { return is_ascii_digit(c); }))
        problems.push_back("size '" + row.size + "' is not an integer");
    if (problems.empty()) return std::nullopt;
    std::string msg = "invalid RECORD row for path '" + row.path + "': ";
    for (std::size_t k = 0; k < problems.size(); ++k)
        msg += (k ? "; " : "") + problems[k];
    return Error(ErrorCode::integrity, msg);
}

std::optional<std::string> check_record_row(const RecordRow& row, const Sha256Digest& digest,
                                            std::uint64_t size) {
    if (!row.hash.empty()) {
        auto eq = row.hash.find('=');
        std::string algo = ascii_lower(row.hash.substr(0, eq));
        if (algo != "sha256")
            return "RECORD hashes '" + row.path + "' with " + algo +
                   (algo == "md5" || algo == "sha1" ? " (too weak; sha256 required)"
                                                    : " (envbox verifies sha256 only)");
        std::string_view expected = std::string_view(row.hash).substr(eq + 1);
        while (!expected.empty() && expected.back() == '=')
            expected.remove_suffix(1);
        std::string actual = to_record_b64(digest);
        if (expected != actual)
            return "hash mismatch for '" + row.path +
                   "': RECORD says sha256=" + std::string(expected) +
                   ", the file has sha256=" + actual + " (" + to_hex(digest) + ")";
    }
    if (!row.size.empty() && row.size != std::to_string(size))
        return "size mismatch for '" + row.path + "': RECORD says " + row.size +
               " bytes, the file has " + std::to_string(size);
    return std::nullopt;
}

std::string csv_field(std::string_view field) {
    if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
    std::string out = "\"";
    for (char c : field) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

Result<WheelInfo> parse_wheel_info(std::string_view text) {
    WheelInfo info;
    bool have_version = false;
    for (const auto& [key, value] : parse_headers(text)) {
        std::string k = ascii_lower(key);
        std::string_view v = strip_ascii_space(value);
        if (k == "wheel-version") {
            auto dot = v.find('.');
            try {
                info.version_major = std::stoi(std::string(v.substr(0, dot)));
                info.version_minor =
                    dot == std::string_view::npos ? 0 : std::stoi(std::string(v.substr(dot + 1)));
            } catch (const std::exception&) {
                return Error(ErrorCode::integrity,
                             "WHEEL: bad Wheel-Version '" + std::string(v) + "'");
            }
            have_version = true;
        } else if (k == "root-is-purelib") {
            info.root_is_purelib = ascii_lower(v) == "true";
        } else if (k == "tag") {
            info.tags.emplace_back(v);
        } else if (k == "build") {
            info.build = std::string(v);
        }
    }
    if (!have_version) return Error(ErrorCode::integrity, "WHEEL: no Wheel-Version");
    if (info.version_major > 1)
        return Error(ErrorCode::integrity, "WHEEL: Wheel-Version " +
                                               std::to_string(info.version_major) + "." +
                                               std::to_string(info.version_minor) +
                                               " is newer than this installer supports (1.x)");
    return info;
}

Result<std::vector<EntryPoint>> parse_entry_points(std::string_view text) {
    std::vector<EntryPoint> out;
    std::string section;
    std::size_t line_no = 0;
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view raw = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        ++line_no;
        std::string_view line = strip_ascii_space(raw);
        if (line.empty() || line.front() == '#' || line.front() == ';') continue;
        if (line.front() == '[') {
            if (line.back() != ']')
                return Error(ErrorCode::integrity,
                             "entry_points.txt line " + std::to_string(line_no) + ": bad section");
            section = std::string(strip_ascii_space(line.substr(1, line.size() - 2)));
            continue;
        }
        if (section != "console_scripts" && section != "gui_scripts") continue;
        auto eq = line.find('=');
        auto bad = [&] {
            return Error(ErrorCode::integrity, "entry_points.txt line " + std::to_string(line_no) +
                                                   ": '" + std::string(line) +
                                                   "' is not 'name = module:attr' in [" + section +
                                                   "]");
        };
        if (eq == std::string_view::npos) return bad();
        EntryPoint ep;
        ep.name = std::string(strip_ascii_space(line.substr(0, eq)));
        std::string_view value = strip_ascii_space(line.substr(eq + 1));
        if (auto br = value.find('['); br != std::string_view::npos) {
            if (value.back() != ']') return bad();
            value = strip_ascii_space(value.substr(0, br));
        }
        auto colon = value.find(':');
        if (ep.name.empty() || colon == std::string_view::npos) return bad();
        ep.module = std::string(strip_ascii_space(value.substr(0, colon)));
        ep.attr = std::string(strip_ascii_space(value.substr(colon + 1)));
        if (!is_dotted_name(ep.module) || !is_dotted_name(ep.attr)) return bad();
        ep.gui = section == "gui_scripts";
        out.push_back(std::move(ep));
    }
    return out;
}

Result<std::string> safe_member_path(std::string_view path) {
    auto bad = [&](std::string_view why) {
        return Error(ErrorCode::integrity,
                     "unsafe archive member '" + std::string(path) + "': " + std::string(why));
    };
    if (path.empty()) return bad("empty name");
    if (path.front() == '/') return bad("absolute path");
    if (path.find('\\') != std::string_view::npos) return bad("backslash in the name");
    if (path.size() >= 2 && path[1] == ':' && is_ascii_alpha(path[0])) return bad("drive letter");
    if (path.find_first_of(std::string_view("\0\r\n", 3)) != std::string_view::npos)
        return bad("control character in the name");
    std::string out;
    std::string_view rest = path;
    while (!rest.empty()) {
        auto slash = rest.find('/');
        std::string_view seg = rest.substr(0, slash);
        rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
        if (seg.empty() || seg == ".") continue;
        if (seg == "..") return bad("'..' segment escapes the target");
        if (!out.empty()) out += '/';
        out += seg;
    }
    if (out.empty()) return bad("empty name");
    // Checked again once `./` and empty segments are gone: `./c:/x` normalises to `c:/x`.
    if (out.size() >= 2 && out[1] == ':' && is_ascii_alpha(out[0])) return bad("drive letter");
    return out;
}

bool in_pycache(std::string_view path) {
    return path.starts_with("__pycache__/") || path.find("/__pycache__/") != std::string_view::npos;
}

bool script_name_escapes(std::string_view name) {
    if (name.empty() || name.front() == '/') return true;
    int depth = 0;
    std::string_view rest = name;
    while (!rest.empty()) {
        auto slash = rest.find('/');
        std::string_view seg = rest.substr(0, slash);
        rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
        if (seg.empty() || seg == ".") continue;
        if (seg == "..") {
            if (--depth < 0) return true;
        } else {
            ++depth;
        }
    }
    return depth <= 0;  // "." and "a/.." name the scripts directory itself
}

std::string sh_quote(std::string_view word) {
    std::string out = "'";
    for (char c : word) {
        if (c == '\'')
            out += R"('\'')";
        else if (c == '\\')
            out += R"('"\\"')";
        else
            out += c;
    }
    return out + "'";
}

std::string shebang_for(std::string_view python) {
    // The kernel splits a shebang line at the first blank and ends it at the newline; every
    // other byte ($, quotes, parentheses) is taken literally, so only those need the trampoline.
    bool simple =
        python.find_first_of(" \t\n") == std::string_view::npos && python.size() + 3 <= 127;
    if (simple) return "#!" + std::string(python) + "\n";
    // Line 2 is a command to sh and the start of one string literal to Python, which compiles
    // the whole file: sh_quote leaves Python only the valid escapes \' and \\ in it.
    return "#!/bin/sh\n'''exec' " + sh_quote(python) + " \"$0\" \"$@\"\n' '''\n";
}

std::string rewrite_shebang(std::string_view content, std::string_view python) {
    if (content.substr(0, 8) != "#!python") return std::string(content);
    auto nl = content.find('\n');
    std::string_view rest =
        nl == std::string_view::npos ? std::string_view() : content.substr(nl + 1);
    return shebang_for(python) + std::string(rest);
}

std::string launcher_script(const EntryPoint& entry, std::string_view python) {
    std::string import_name = entry.attr.substr(0, entry.attr.find('.'));
    return shebang_for(python) +
           "# -*- coding: utf-8 -*-\n"
           "import re\n"
           "import sys\n"
           "from " +
           entry.module + " import " + import_name +
           "\n"
           "if __name__ == '__main__':\n"
           "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
           "    sys.exit(" +
           entry.attr + "())\n";
}

std::vector<EntryPoint> scripts_for_target(std::vector<EntryPoint> entries, int major, int minor) {
    std::vector<EntryPoint> out;
    const std::string mm = std::to_string(major) + "." + std::to_string(minor);
    auto take = [&](const std::string& name) -> std::optional<EntryPoint> {
        auto it = std::find_if(entries.begin(), entries.end(),
                               [&](const EntryPoint& e) { return !e.gui && e.name == name; });
        if (it == entries.end()) return std::nullopt;
        EntryPoint e = *it;
        entries.erase(it);
        return e;
    };
    auto drop_matching = [&](const std::regex& re) {
        std::erase_if(entries,
                      [&](const EntryPoint& e) { return !e.gui && std::regex_match(e.name, re); });
    };
    auto variant = [](EntryPoint e, std::string name) {
        e.name = std::move(name);
        return e;
    };
    if (auto pip = take("pip")) {
        out.push_back(variant(*pip, "pip"));
        out.push_back(variant(*pip, "pip" + std::to_string(major)));
        out.push_back(variant(*pip, "pip" + mm));
        drop_matching(std::regex(R"(pip(\d+(\.\d+)?)?)"));
    }
    if (auto ez = take("easy_install")) {
        out.push_back(variant(*ez, "easy_install"));
        out.push_back(variant(*ez, "easy_install-" + mm));
        drop_matching(std::regex(R"(easy_install(-\d+\.\d+)?)"));
    }
    for (auto& e : entries)
        if (!e.gui) out.push_back(std::move(e));
    for (auto& e : entries)
        if (e.gui) out.push_back(std::move(e));
    return out;
}

}  // namespace envbox::pep
