#include "envbox/lock/manifest_edit.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "envbox/lock/manifest.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/util/text.hpp"
#include "lock/toml_reader.hpp"
#include "lock/toml_text.hpp"

namespace envbox::lock {
namespace {

using namespace text;  // the TOML text this file edits (lock/toml_text.hpp)

Error cannot_edit(std::string_view source, std::string_view what, std::string_view why) {
    return Error(ErrorCode::invalid_input, std::string(source) + ": cannot edit " +
                                               std::string(what) + " as it is written (" +
                                               std::string(why) +
                                               "); nothing was changed: edit it by hand");
}

// The manifest, and `[environment].requirements` in its text.
struct Located {
    Manifest manifest;
    ArrayText array;
    std::vector<std::string> values;  // each element's string, as toml++ decoded it
};

Result<Located> locate_requirements(std::string_view t, std::string_view source,
                                    const ProjectFile* project) {
    constexpr std::string_view what = "[environment].requirements";
    auto m = Manifest::parse(t, source, project);
    if (!m) return m.error();
    auto doc = parse_toml(t, source);
    if (!doc) return doc.error();
    const toml::array* arr = (*doc)["environment"]["requirements"].as_array();
    if (!arr) return cannot_edit(source, what, "not an array");
    auto open = value_token(t, *arr, [](const std::string& k) { return k == "requirements"; });
    if (!open || open->kind != Token::punct || t[open->begin] != '[')
        return cannot_edit(source, what, "its array does not open on its key's line");
    auto scanned = scan_array(t, open->begin);
    if (!scanned || scanned->elements.size() != arr->size())
        return cannot_edit(source, what, "its elements are not all plain strings");
    Located l{std::move(*m), std::move(*scanned), {}};
    for (const auto& v : *arr)
        l.values.push_back(std::string(v.value_or(std::string_view())));
    return l;
}

std::vector<std::string> requirement_texts(const Manifest& m) {
    std::vector<std::string> out;
    for (const auto& r : m.requirements)
        out.push_back(r.str());
    return out;
}

// The same documents but for `[environment].requirements` and `[sources]`: every other value
// (indexes, [run], [install], [tool.*], …) compared as toml++ reads it.
bool same_elsewhere(std::string_view a, std::string_view b, std::string_view source) {
    auto x = parse_toml(a, source), y = parse_toml(b, source);
    if (!x || !y) return false;
    for (toml::table* d : {&*x, &*y}) {
        if (auto* env = d->get_as<toml::table>("environment")) env->erase("requirements");
        d->erase("sources");
    }
    return *x == *y;
}

// The edit's own check: `after` parses, with exactly the requirements and sources meant and
// every other value as `before` had it.
// shape: the two texts, the values meant, and the context of the message.
Result<bool> check_edit(std::string_view after, std::string_view source, std::string_view before,
                        const std::vector<std::string>& requirements,
                        const std::map<std::string, std::string>& sources, std::string_view what,
                        const ProjectFile* project) {
    auto m = Manifest::parse(after, source, project);
    if (!m) return cannot_edit(source, what, "the edit would not parse: " + m.error().message());
    if (requirement_texts(*m) != requirements || m->sources != sources ||
        !same_elsewhere(before, after, source))
        return cannot_edit(source, what, "the edit would change more than meant");
    return true;
}

// `t` with `quoted` appended to the array, in the array's own layout.
std::string append_element(std::string_view t, const ArrayText& a, const std::string& quoted) {
    const std::string eol = eol_of(t);
    const auto& e = a.elements;
    if (!a.multiline) {
        if (e.empty()) return splice(t, a.open + 1, a.close - a.open - 1, quoted);
        std::string sep = ", ";
        if (e.size() >= 2)
            sep = std::string(t.substr(e[e.size() - 2].end, e.back().begin - e[e.size() - 2].end));
        return splice(t, e.back().end, 0, sep + quoted);
    }
    if (e.empty()) {
        if (!blank_before(t, a.close)) return splice(t, a.close, 0, quoted);
        return splice(t, line_begin(t, a.close), 0,
                      leading_blanks(t, a.close) + "    " + quoted + "," + eol);
    }
    const Element& last = e.back();
    // Indented as the last element's line, unless that line is the one the array opens on.
    const std::string indent =
        line_begin(t, last.begin) > a.open ? leading_blanks(t, last.begin) : "    ";
    const std::size_t after = last.comma ? *last.comma + 1 : last.end;
    if (rest_is_blank(t, after)) {
        // A line of its own after the last one's (and its comment); the trailing comma as
        // the array has it.
        const std::size_t at = line_end(t, after);
        std::string s = splice(t, at, 0, eol + indent + quoted + (last.comma ? "," : ""));
        if (!last.comma) s.insert(last.end, ",");
        return s;
    }
    if (last.comma) return splice(t, after, 0, eol + indent + quoted + ",");
    return splice(t, last.end, 0, "," + eol + indent + quoted);
}

// `t` without element `k` of the array.
std::string erase_element(std::string_view t, const ArrayText& a, std::size_t k) {
    const auto& e = a.elements;
    const Element& x = e[k];
    const std::size_t after = x.comma ? *x.comma + 1 : x.end;
    const bool last = k + 1 == e.size();
    if (a.multiline && blank_before(t, x.begin) && rest_is_blank(t, after)) {
        // Alone on its line: the line goes, with the comment on it.
        const std::size_t from = line_begin(t, x.begin);
        std::string s = splice(t, from, past_break(t, line_end(t, after)) - from, "");
        // The new last element keeps no comma the old last one did not have.
        if (last && !x.comma && k > 0 && e[k - 1].comma) s.erase(*e[k - 1].comma, 1);
        return s;
    }
    if (!last) return splice(t, x.begin, e[k + 1].begin - x.begin, "");
    if (k > 0) return splice(t, e[k - 1].end, (x.comma ? *x.comma : x.end) - e[k - 1].end, "");
    return splice(t, x.begin, after - x.begin, "");
}

bool bare_key(std::string_view k) {
    if (k.empty()) return false;
    for (char c : k)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    return true;
}

std::string names_of(const Manifest& m) {
    std::string out;
    for (const auto& r : m.requirements)
        out += (out.empty() ? "" : ", ") + r.str();
    return out;
}

}  // namespace

std::string toml_quote(std::string_view s) {
    bool plain = true, literal_ok = true;
    for (unsigned char c : s) {
        const bool control = (c < 0x20 && c != '\t') || c == 0x7f;
        plain = plain && !control && c != '"' && c != '\\';
        literal_ok = literal_ok && !control && c != '\'';
    }
    // A marker's quotes read better in a literal string than escaped.
    if (!plain && literal_ok) return "'" + std::string(s) + "'";
    return toml_string(s);
}

Result<RequirementEdit> add_requirement(std::string_view text, std::string_view source,
                                        std::string_view written_as, const ProjectFile* project) {
    const std::string written = trimmed(written_as);
    auto req = pep::Requirement::parse(written);
    if (!req)
        return Error(ErrorCode::usage,
                     "invalid requirement '" + written + "': " + req.error().message());
    auto located = locate_requirements(text, source, project);
    if (!located) return located.error();
    const Manifest before = located->manifest;
    const std::string name = req->canonical_name();
    std::vector<std::size_t> same;
    for (std::size_t k = 0; k < before.requirements.size(); ++k)
        if (before.requirements[k].canonical_name() == name) same.push_back(k);
    if (same.size() == 1 && located->values[same[0]] == written)
        return RequirementEdit{std::string(text), RequirementChange::kept};

    std::vector<std::string> want = requirement_texts(before);
    std::string t(text);
    RequirementEdit edit;
    if (same.empty()) {
        t = append_element(t, located->array, toml_quote(written));
        want.push_back(req->str());
    } else {
        // Later requirements of the name go first (right to left, each erase re-read), then
        // the first is replaced where it stands.
        for (std::size_t i = same.size(); i-- > 1;) {
            auto again = locate_requirements(t, source, project);
            if (!again) return again.error();
            t = erase_element(t, again->array, same[i]);
            want.erase(want.begin() + static_cast<std::ptrdiff_t>(same[i]));
        }
        auto again = locate_requirements(t, source, project);
        if (!again) return again.error();
        const Element& x = again->array.elements[same[0]];
        t = splice(t, x.begin, x.end - x.begin, toml_quote(written));
        want[same[0]] = req->str();
        edit.change = RequirementChange::replaced;
    }
    auto ok =
        check_edit(t, source, text, want, before.sources, "[environment].requirements", project);
    if (!ok) return ok.error();
    edit.text = std::move(t);
    return edit;
}

Result<std::string> remove_requirement(std::string_view text, std::string_view source,
                                       std::string_view name, const ProjectFile* project) {
    auto located = locate_requirements(text, source, project);
    if (!located) return located.error();
    const Manifest before = located->manifest;
    const std::string canonical = pep::canonicalize_name(trimmed(name));
    std::vector<std::size_t> same;
    for (std::size_t k = 0; k < before.requirements.size(); ++k)
        if (before.requirements[k].canonical_name() == canonical) same.push_back(k);
    if (same.empty())
        return Error(ErrorCode::usage,
                     "'" + std::string(name) + "' is not a requirement of " + std::string(source) +
                         (before.requirements.empty() ? " (it has none)"
                                                      : "; it requires " + names_of(before)));
    std::vector<std::string> want = requirement_texts(before);
    std::string t(text);
    for (std::size_t i = same.size(); i-- > 0;) {
        auto again = locate_requirements(t, source, project);
        if (!again) return again.error();
        t = erase_element(t, again->array, same[i]);
        want.erase(want.begin() + static_cast<std::ptrdiff_t>(same[i]));
    }
    auto ok =
        check_edit(t, source, text, want, before.sources, "[environment].requirements", project);
    if (!ok) return ok.error();
    return t;
}

namespace {

// `sources = { … }`: one more `entry` (`key = "index"`) before the '}'.
Result<std::string> pin_in_inline_table(std::string_view t, std::string_view source,
                                        const toml::table& table, const std::string& entry) {
    auto open = value_token(t, table, [](const std::string& k) { return k == "sources"; });
    if (!open || open->kind != Token::punct || t[open->begin] != '{')
        return cannot_edit(source, "[sources]", "its inline table does not open on its key's line");
    Lexer lx(t, open->end);
    std::size_t last_end = open->end;
    for (Token tok = lx.next();; tok = lx.next()) {
        if (tok.kind == Token::eof || tok.kind == Token::newline)
            return cannot_edit(source, "[sources]", "its inline table is not on one line");
        if (tok.kind == Token::punct && t[tok.begin] == '}') break;
        last_end = tok.end;
    }
    return splice(t, last_end, 0, table.empty() ? " " + entry + " " : ", " + entry);
}

// A `[sources]` header's table (or dotted `sources.NAME` keys): `entry` on a line after its last
// entry, indented as that one.
Result<std::string> pin_after_last_entry(std::string_view t, std::string_view source,
                                         const toml::table& table, const std::string& entry) {
    std::size_t last_line = table.source().begin.line;
    Lexer header(t, line_offset(t, last_line));
    Token a = header.next(), b = header.next(), c = header.next();
    const bool is_header = a.kind == Token::punct && t[a.begin] == '[' &&
                           (b.kind == Token::bare || b.kind == Token::string) &&
                           key_text(t, b) == "sources" && c.kind == Token::punct &&
                           t[c.begin] == ']';
    if (!is_header && table.empty())
        return cannot_edit(source, "[sources]", "it has neither a header nor entries");
    std::string indent;
    for (const auto& [k, v] : table) {
        const std::size_t line = v.source().begin.line;
        if (line >= last_line) {
            last_line = line;
            indent = leading_blanks(t, line_offset(t, line));
        }
    }
    const std::string eol = eol_of(t);
    const std::size_t at = past_break(t, line_end(t, line_offset(t, last_line)));
    std::string line = indent + (is_header ? "" : "sources.") + entry + eol;
    if (at == t.size() && !t.empty() && t.back() != '\n') line = eol + line;
    return splice(t, at, 0, line);
}

// The error for an `--index` the manifest has no `[[index]]` of; nothing when it has one.
std::optional<Error> unknown_index(const Manifest& m, std::string_view source,
                                   std::string_view index) {
    std::string names;
    for (const auto& i : m.indexes) {
        if (i.name == index) return std::nullopt;
        names += (names.empty() ? "" : ", ") + i.name;
    }
    return Error(ErrorCode::usage, "--index " + std::string(index) + ": " + std::string(source) +
                                       " has no [[index]] of that name" +
                                       (names.empty() ? std::string(" (it has none)")
                                                      : "; its indexes are " + names));
}

}  // namespace

namespace {

// `text` with `[sources]` entry `package = value` (value: TOML text) in place of one of the same
// canonical name, or after the table's last entry, or in a new table at the end; checked to
// parse as `want` (index pins) with every other setting as before.
// shape: the text, the entry to write, and what the edit must leave (the manifest before, the
// index pins after, the project file both are read with).
Result<std::string> pin_entry(std::string_view text, std::string_view source,
                              std::string_view package, const std::string& value,
                              const Manifest& before,
                              const std::map<std::string, std::string>& want,
                              const ProjectFile* project) {
    const std::string canonical = pep::canonicalize_name(package);
    auto doc = parse_toml(text, source);
    if (!doc) return doc.error();
    const std::string entry =
        (bare_key(package) ? std::string(package) : toml_quote(package)) + " = " + value;
    const toml::table* table = doc->get_as<toml::table>("sources");
    const KeyMatch same_name = [&](const std::string& k) {
        return pep::canonicalize_name(k) == canonical;
    };
    auto entry_node = [&]() -> const toml::node* {
        for (const auto& [k, v] : *table)
            if (same_name(std::string(k.str()))) return &v;
        return nullptr;
    };
    Result<std::string> t = std::string();
    if (!table) {
        // No [sources] yet: a new table at the end.
        const std::string eol = eol_of(text);
        std::string s(text);
        if (!s.empty() && s.back() != '\n') s += eol;
        t = s + eol + "[sources]" + eol + entry + eol;
    } else if (const toml::node* node = entry_node()) {
        // The entry's value, replaced where it stands.
        auto v = value_token(text, *node, same_name);
        if (!v || v->kind != Token::string)
            return cannot_edit(source, "[sources]", "its entry is not one string on one line");
        t = splice(text, v->begin, v->end - v->begin, value);
    } else {
        t = table->is_inline() ? pin_in_inline_table(text, source, *table, entry)
                               : pin_after_last_entry(text, source, *table, entry);
    }
    if (!t) return t.error();
    auto ok = check_edit(*t, source, text, requirement_texts(before), want, "[sources]", project);
    if (!ok) return ok.error();
    return t;
}

}  // namespace

Result<std::string> pin_source(std::string_view text, std::string_view source,
                               std::string_view package, std::string_view index,
                               const ProjectFile* project) {
    auto before = Manifest::parse(text, source, project);
    if (!before) return before.error();
    if (!pep::is_valid_name(package))
        return Error(ErrorCode::usage, "invalid package name '" + std::string(package) + "'");
    if (auto e = unknown_index(*before, source, index)) return *e;
    const std::string canonical = pep::canonicalize_name(package);
    auto want = before->sources;
    if (auto it = want.find(canonical); it != want.end() && it->second == index)
        return std::string(text);
    want[canonical] = std::string(index);
    return pin_entry(text, source, package, toml_quote(index), *before, want, project);
}

Result<std::string> pin_local_source(std::string_view text, std::string_view source,
                                     std::string_view package, std::string_view path, bool editable,
                                     const ProjectFile* project) {
    auto before = Manifest::parse(text, source, project);
    if (!before) return before.error();
    if (!pep::is_valid_name(package))
        return Error(ErrorCode::usage, "invalid package name '" + std::string(package) + "'");
    const std::string canonical = pep::canonicalize_name(package);
    auto want = before->sources;
    want.erase(canonical);
    const std::string value =
        "{ path = " + toml_quote(path) + (editable ? ", editable = true }" : " }");
    auto t = pin_entry(text, source, package, value, *before, want, project);
    if (!t) return t;
    auto after = Manifest::parse(*t, source, project);
    if (!after) return cannot_edit(source, "[sources]", "the edit would not parse");
    const auto it = after->local_sources.find(canonical);
    if (it == after->local_sources.end() || it->second.path != path ||
        it->second.editable != editable)
        return cannot_edit(source, "[sources]", "the edit would not name that folder");
    return t;
}

}  // namespace envbox::lock
