#pragma once
// Typed, located access to a parsed TOML document: every value read through a Reader knows its
// key path (`packages[3].wheels[0].size`) and line, so validation errors name both.

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "envbox/util/error.hpp"
#include "envbox/util/spelling.hpp"

namespace envbox::lock {

/// The most bytes a lock or manifest may have, and the most segments one dotted key (`a.b.c`, a
/// `[table.header]`) may have. toml++ bounds nested arrays and inline tables itself (256) but
/// recurses once per dotted-key segment, so a 200 kB key overflows the stack; real locks use
/// three or four segments.
constexpr std::size_t kMaxTomlBytes = 16u << 20;
constexpr int kMaxTomlKeySegments = 32;

/// What an unknown key of a manifest or envbox.toml error adds: where other tools' keys go.
constexpr std::string_view kToolHint = "settings for other tools belong under [tool.NAME]";

/// Checks what toml++ does not bound, before it sees the text: the size, and the segments of
/// each dotted key. Dots are counted outside strings and comments between the characters that
/// end a key (`=`, `,`, brackets, braces, newline), so the dots of floats, dates and quoted
/// text never count. Returns the problem (" is N bytes…" or ":LINE: what", to follow the
/// file's name), or nullopt.
inline std::optional<std::string> toml_shape_problem(std::string_view text) {
    if (text.size() > kMaxTomlBytes)
        return " is " + std::to_string(text.size()) + " bytes; the limit is " +
               std::to_string(kMaxTomlBytes) + " (16 MiB)";
    std::size_t line = 1;
    int dots = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '#') {
            while (i + 1 < text.size() && text[i + 1] != '\n')
                ++i;
        } else if (c == '"' || c == '\'') {
            const std::string triple(3, c);
            const bool multi = text.substr(i, 3) == triple;
            std::size_t j = i + (multi ? 3 : 1);
            for (; j < text.size(); ++j) {
                if (text[j] == '\n') {
                    if (!multi) break;  // an unterminated string: the parser reports it
                    ++line;
                } else if (c == '"' && text[j] == '\\') {
                    if (j + 1 < text.size() && text[j + 1] == '\n') ++line;
                    ++j;
                } else if (multi ? text.substr(j, 3) == triple : text[j] == c) {
                    if (multi) {
                        j += 2;  // up to two more quotes still belong to the string
                        for (int extra = 0; extra < 2 && j + 1 < text.size() && text[j + 1] == c;
                             ++extra)
                            ++j;
                    }
                    break;
                }
            }
            i = j < text.size() && text[j] == '\n' ? j - 1 : j;
        } else if (c == '.') {
            if (++dots >= kMaxTomlKeySegments)
                return ":" + std::to_string(line) + ": a dotted key has more than " +
                       std::to_string(kMaxTomlKeySegments) + " segments";
        } else if (c == '=' || c == ',' || c == '[' || c == ']' || c == '{' || c == '}' ||
                   c == '\n') {
            dots = 0;
            if (c == '\n') ++line;
        }
    }
    return std::nullopt;
}

/// Parses a TOML document; a syntax error becomes "SOURCE:LINE:COLUMN: description", and a
/// document toml_shape_problem refuses is an error before parsing.
inline Result<toml::table> parse_toml(std::string_view text, std::string_view source) {
    if (auto problem = toml_shape_problem(text))
        return Error(ErrorCode::invalid_input, std::string(source) + *problem);
    try {
        return toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        std::ostringstream msg;
        msg << source << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
            << e.description();
        return Error(ErrorCode::invalid_input, msg.str());
    }
}

class TomlReader {
  public:
    explicit TomlReader(std::string_view source) : source_(source) {}

    [[noreturn]] void fail(const toml::node* at, int fallback_line, std::string_view what,
                           std::string_view path) const {
        int line = at ? static_cast<int>(at->source().begin.line) : fallback_line;
        std::string msg = std::string(source_);
        if (line > 0) msg += ":" + std::to_string(line);
        msg += ": " + std::string(what) + " in '" + std::string(path) + "'";
        throw Error(ErrorCode::invalid_input, std::move(msg));
    }

    static std::string type_name(const toml::node& n) {
        switch (n.type()) {
            case toml::node_type::string:
                return "str";
            case toml::node_type::integer:
                return "int";
            case toml::node_type::floating_point:
                return "float";
            case toml::node_type::boolean:
                return "bool";
            case toml::node_type::table:
                return "Mapping";
            case toml::node_type::array:
                return "Sequence";
            case toml::node_type::date:
                return "date";
            case toml::node_type::time:
                return "time";
            case toml::node_type::date_time:
                return "datetime";
            default:
                return "value";
        }
    }

    void wrong_type(const toml::node& n, std::string_view expected, std::string_view path) const {
        fail(&n, 0, "Unexpected type " + type_name(n) + " (expected " + std::string(expected) + ")",
             path);
    }

    static std::string join(std::string_view parent, std::string_view key) {
        return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
    }
    static std::string index(std::string_view parent, std::size_t k) {
        return std::string(parent) + "[" + std::to_string(k) + "]";
    }

    std::optional<std::string> opt_string(const toml::table& t, std::string_view key,
                                          std::string_view parent) const {
        const toml::node* n = t.get(key);
        if (!n) return std::nullopt;
        if (!n->is_string()) wrong_type(*n, "str", join(parent, key));
        return std::string(n->as_string()->get());
    }
    std::string req_string(const toml::table& t, std::string_view key, std::string_view parent,
                           int line) const {
        auto v = opt_string(t, key, parent);
        if (!v) fail(nullptr, line, "Missing required value", join(parent, key));
        return *v;
    }
    std::optional<std::int64_t> opt_int(const toml::table& t, std::string_view key,
                                        std::string_view parent) const {
        const toml::node* n = t.get(key);
        if (!n) return std::nullopt;
        if (!n->is_integer()) wrong_type(*n, "int", join(parent, key));
        return n->as_integer()->get();
    }
    std::optional<bool> opt_bool(const toml::table& t, std::string_view key,
                                 std::string_view parent) const {
        const toml::node* n = t.get(key);
        if (!n) return std::nullopt;
        if (!n->is_boolean()) wrong_type(*n, "bool", join(parent, key));
        return n->as_boolean()->get();
    }
    const toml::table* opt_table(const toml::table& t, std::string_view key,
                                 std::string_view parent) const {
        const toml::node* n = t.get(key);
        if (!n) return nullptr;
        if (!n->is_table()) wrong_type(*n, "Mapping", join(parent, key));
        return n->as_table();
    }
    const toml::array* opt_array(const toml::table& t, std::string_view key,
                                 std::string_view parent) const {
        const toml::node* n = t.get(key);
        if (!n) return nullptr;
        if (!n->is_array()) wrong_type(*n, "Sequence", join(parent, key));
        return n->as_array();
    }
    /// A datetime, date or string value as written.
    std::optional<std::string> opt_datetime(const toml::table& t, std::string_view key,
                                            std::string_view parent) const {
        const toml::node* n = t.get(key);
        if (!n) return std::nullopt;
        if (!n->is_date_time() && !n->is_date() && !n->is_string())
            wrong_type(*n, "datetime", join(parent, key));
        if (n->is_string()) return std::string(n->as_string()->get());
        std::ostringstream out;
        if (n->is_date_time())
            out << n->as_date_time()->get();
        else
            out << n->as_date()->get();
        return out.str();
    }

    static int line_of(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

    /// Refuses any key of `t` not in `known` (opt-in: pylock.toml's readers tolerate unknown
    /// keys, as PEP 751 asks). The error names the file, the key's line, its path and, when
    /// one is close enough to be a typo, the valid key meant: "did you mean 'explicit'?".
    void require_known_keys(const toml::table& t, std::initializer_list<std::string_view> known,
                            std::string_view parent, std::string_view elsewhere) const {
        for (const auto& [key, node] : t) {
            bool ok = false;
            for (auto k : known)
                ok = ok || k == key.str();
            if (ok) continue;
            std::string what = "Unknown key '" + join(parent, key.str()) + "'";
            if (auto near = closest_spelling(key.str(), std::vector<std::string_view>(known))) {
                what += " (did you mean '" + *near + "'?)";
            } else {
                what += " (expected ";
                std::size_t i = 0;
                for (auto k : known)
                    what += (i++ == 0 ? "" : i == known.size() ? " or " : ", ") + std::string(k);
                what += ")";
            }
            if (!elsewhere.empty()) what += "; " + std::string(elsewhere);
            int line =
                key.source().begin.line ? static_cast<int>(key.source().begin.line) : line_of(node);
            throw Error(ErrorCode::invalid_input,
                        std::string(source_) + ":" + std::to_string(line) + ": " + what);
        }
    }

  private:
    std::string_view source_;
};

/// Parses `text` and reads it with `Reader(source).read(table)`, whose located errors (thrown
/// as `Error`) become the Result's error.
template <class Reader>
auto read_document(std::string_view text, std::string_view source)
    -> Result<decltype(Reader(source).read(std::declval<const toml::table&>()))> {
    auto doc = parse_toml(text, source);
    if (!doc) return doc.error();
    try {
        return Reader(source).read(*doc);
    } catch (Error& e) {
        return std::move(e);
    }
}

}  // namespace envbox::lock
