// The PEP 508 grammar: requirements and markers, parsed by one recursive-descent parser that
// follows the token rules of the reference implementation (pypa/packaging `_tokenizer.py`),
// so the same strings are accepted and rejected. Errors carry the input and a caret.

#include <algorithm>
#include <array>

#include "envbox/pep/marker.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/pep/requirement.hpp"
#include "pep/text.hpp"

namespace envbox::pep {
namespace {

bool is_ident_char(char c) {
    return is_ascii_alnum(c) || c == '.' || c == '_' || c == '-';
}
bool is_word_char(char c) {
    return is_ascii_alnum(c) || c == '_';
}

// Marker variables and the legacy spellings packaging accepts, mapped to canonical names.
// Longest spellings first so that `extras` is not read as `extra`.
constexpr std::array<std::pair<std::string_view, std::string_view>, 20> kVariables{{
    {"platform_python_implementation", "platform_python_implementation"},
    {"platform.python_implementation", "platform_python_implementation"},
    {"python_implementation", "platform_python_implementation"},
    {"implementation_version", "implementation_version"},
    {"implementation_name", "implementation_name"},
    {"python_full_version", "python_full_version"},
    {"dependency_groups", "dependency_groups"},
    {"platform_release", "platform_release"},
    {"platform_version", "platform_version"},
    {"platform.version", "platform_version"},
    {"platform_machine", "platform_machine"},
    {"platform.machine", "platform_machine"},
    {"platform_system", "platform_system"},
    {"python_version", "python_version"},
    {"sys_platform", "sys_platform"},
    {"sys.platform", "sys_platform"},
    {"os_name", "os_name"},
    {"os.name", "os_name"},
    {"extras", "extras"},
    {"extra", "extra"},
}};

class Parser {
  public:
    explicit Parser(std::string_view input) : s_(input) {}

    Requirement requirement() {
        Requirement req;
        skip_ws();
        req.name = identifier("Expected package name at the start of dependency specifier");
        skip_ws();
        if (peek('[')) req.extras = extras();
        skip_ws();
        if (take('@')) {
            skip_ws();
            std::size_t start = i_;
            while (i_ < s_.size() && s_[i_] != ' ' && s_[i_] != '\t')
                ++i_;
            if (i_ == start) fail("Expected URL after @");
            req.url = std::string(s_.substr(start, i_ - start));
            if (at_end()) return req;
            if (!skip_ws() || at_end()) {
                if (at_end()) return req;
                fail("Expected end or semicolon (after URL and whitespace)");
            }
            if (!take(';')) fail("Expected semicolon (after URL and whitespace) or end");
            req.marker = Marker(marker_group());
            skip_ws();
            if (!at_end()) fail("Expected end of dependency specifier");
            return req;
        }
        bool had_specifier = false;
        if (take('(')) {
            skip_ws();
            req.specifier = version_many(had_specifier);
            skip_ws();
            if (!take(')'))
                fail(
                    "Expected matching RIGHT_PARENTHESIS for LEFT_PARENTHESIS, after version "
                    "specifier");
            had_specifier = true;
        } else {
            req.specifier = version_many(had_specifier);
        }
        skip_ws();
        if (at_end()) return req;
        if (!take(';')) {
            fail(had_specifier
                     ? "Expected comma (within version specifier), semicolon (after version "
                       "specifier) or end"
                     : "Expected semicolon (after name with no version specifier) or end");
        }
        req.marker = Marker(marker_group());
        skip_ws();
        if (!at_end()) fail("Expected end of dependency specifier");
        return req;
    }

    std::shared_ptr<const MarkerGroup> whole_marker() {
        auto group = marker_group();
        skip_ws();
        if (!at_end()) fail("Expected end of marker expression");
        return group;
    }

  private:
    std::string_view s_;
    std::size_t i_ = 0;
    // Parenthesised groups open so far. The parser (and the evaluator and printer after it)
    // recurse once per level, so a hostile `((((…` in a lock or a wheel's METADATA would
    // otherwise overflow the stack; real markers nest two or three deep.
    static constexpr int kMaxMarkerDepth = 64;
    int depth_ = 0;

    [[noreturn]] void fail(std::string_view what) const { throw parse_error(what, s_, i_); }
    bool at_end() const { return i_ >= s_.size(); }
    bool peek(char c) const { return i_ < s_.size() && s_[i_] == c; }
    bool take(char c) {
        if (!peek(c)) return false;
        ++i_;
        return true;
    }
    // Spaces and tabs only: a newline is never whitespace in this grammar.
    bool skip_ws() {
        std::size_t start = i_;
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t'))
            ++i_;
        return i_ > start;
    }
    // A keyword delimited by word boundaries (`in`, `not`, `and`, `or`).
    bool take_keyword(std::string_view w) {
        if (s_.substr(i_, w.size()) != w) return false;
        if (i_ > 0 && is_word_char(s_[i_ - 1])) return false;
        std::size_t end = i_ + w.size();
        if (end < s_.size() && is_word_char(s_[end])) return false;
        i_ = end;
        return true;
    }

    std::string identifier(std::string_view error) {
        if (at_end() || !is_ascii_alnum(s_[i_])) fail(error);
        std::size_t end = i_;
        while (end < s_.size() && is_ident_char(s_[end]))
            ++end;
        while (!is_ascii_alnum(s_[end - 1]))
            --end;  // the name ends on a letter or digit
        std::string out(s_.substr(i_, end - i_));
        i_ = end;
        return out;
    }

    std::vector<std::string> extras() {
        take('[');
        std::vector<std::string> out;
        skip_ws();
        if (take(']')) return out;
        for (;;) {
            skip_ws();
            if (at_end() || !is_ascii_alnum(s_[i_])) {
                if (!out.empty()) fail("Expected extra name after comma");
                fail("Expected matching RIGHT_BRACKET for LEFT_BRACKET, after extras");
            }
            out.push_back(identifier("Expected extra name"));
            // Each extra is a package of its own to the resolver; real requirements name a few.
            if (out.size() > 64) fail("More than 64 extras");
            skip_ws();
            if (take(',')) continue;
            if (take(']')) break;
            if (!at_end() && is_ascii_alnum(s_[i_])) fail("Expected comma between extra names");
            fail("Expected matching RIGHT_BRACKET for LEFT_BRACKET, after extras");
        }
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    }

    // Zero or more specifier clauses separated by commas (a trailing comma is allowed).
    SpecifierSet version_many(bool& had_any) {
        std::string joined;
        for (;;) {
            skip_ws();
            std::size_t start = i_;
            if (!clause()) break;
            if (!joined.empty()) joined += ',';
            joined += s_.substr(start, i_ - start);
            had_any = true;
            skip_ws();
            if (!take(',')) break;
        }
        auto set = SpecifierSet::parse(joined);
        if (!set) fail(set.error().message());
        return std::move(*set);
    }

    // One clause: an operator and the run of characters a version can contain. Whether the run
    // is a valid version for that operator is decided by `Specifier::parse`.
    bool clause() {
        static constexpr std::array<std::string_view, 8> ops{
            "===", "==", "~=", "!=", "<=", ">=", "<", ">"};
        std::size_t start = i_;
        std::string_view op;
        for (auto o : ops)
            if (s_.substr(i_, o.size()) == o) {
                op = o;
                break;
            }
        if (op.empty()) return false;
        i_ += op.size();
        skip_ws();
        std::size_t vstart = i_;
        if (op == "===") {
            while (i_ < s_.size() && !is_ascii_space(s_[i_]) && s_[i_] != ';' && s_[i_] != ')' &&
                   s_[i_] != ',')
                ++i_;
        } else {
            while (i_ < s_.size() &&
                   (is_ident_char(s_[i_]) || s_[i_] == '!' || s_[i_] == '*' || s_[i_] == '+'))
                ++i_;
        }
        if (i_ == vstart) {
            i_ = start;
            return false;
        }
        auto spec = Specifier::parse(s_.substr(start, i_ - start));
        if (!spec) {
            i_ = vstart;
            fail(spec.error().message());
        }
        return true;
    }

    // marker = atom (BOOLOP atom)*
    std::shared_ptr<const MarkerGroup> marker_group() {
        auto group = std::make_shared<MarkerGroup>();
        group->elements.push_back(marker_atom());
        for (;;) {
            std::size_t save = i_;
            skip_ws();
            if (take_keyword("and")) {
                group->ors.push_back(false);
            } else if (take_keyword("or")) {
                group->ors.push_back(true);
            } else {
                i_ = save;
                break;
            }
            group->elements.push_back(marker_atom());
        }
        return group;
    }

    MarkerElement marker_atom() {
        skip_ws();
        if (take('(')) {
            if (++depth_ > kMaxMarkerDepth) fail("Marker expression nests parentheses too deeply");
            skip_ws();
            auto inner = marker_group();
            --depth_;
            skip_ws();
            if (!take(')'))
                fail(
                    "Expected matching RIGHT_PARENTHESIS for LEFT_PARENTHESIS, after marker "
                    "expression");
            skip_ws();
            return inner;
        }
        MarkerComparison cmp;
        cmp.lhs = marker_operand();
        skip_ws();
        cmp.op = marker_op();
        skip_ws();
        cmp.rhs = marker_operand();
        skip_ws();
        // Names compared with `extra`, `extras` or `dependency_groups` are normalised once,
        // here (PEP 685), so `extra == "Foo_Bar"` prints and compares as `extra == "foo-bar"`.
        if (cmp.lhs.is_variable && cmp.lhs.text == "extra" && !cmp.rhs.is_variable)
            cmp.rhs.text = canonicalize_name(cmp.rhs.text);
        if (cmp.rhs.is_variable && !cmp.lhs.is_variable &&
            (cmp.rhs.text == "extra" || cmp.rhs.text == "extras" ||
             cmp.rhs.text == "dependency_groups"))
            cmp.lhs.text = canonicalize_name(cmp.lhs.text);
        return cmp;
    }

    MarkerOperand marker_operand() {
        if (peek('\'') || peek('"')) return MarkerOperand{false, quoted_string()};
        for (const auto& [spelling, canonical] : kVariables) {
            if (s_.substr(i_, spelling.size()) != spelling) continue;
            std::size_t end = i_ + spelling.size();
            if (end < s_.size() && is_word_char(s_[end])) continue;
            if (i_ > 0 && is_word_char(s_[i_ - 1])) continue;
            i_ = end;
            return MarkerOperand{true, std::string(canonical)};
        }
        fail("Expected a marker variable or quoted string");
    }

    // '…' or "…"; a backslash may escape the quote, another quote or itself.
    std::string quoted_string() {
        std::size_t start = i_;
        char quote = s_[i_++];
        std::string out;
        while (i_ < s_.size() && s_[i_] != quote) {
            if (s_[i_] == '\\') {
                if (i_ + 1 >= s_.size() ||
                    (s_[i_ + 1] != '\\' && s_[i_ + 1] != '\'' && s_[i_ + 1] != '"')) {
                    i_ = start;
                    fail("Invalid quoted string");
                }
                ++i_;
            }
            out += s_[i_++];
            // Marker literals are versions and platform names; `in` compares two of them
            // byte by byte, so megabytes on each side would take minutes.
            if (out.size() > 1024) {
                i_ = start;
                fail("Quoted string longer than 1024 characters");
            }
        }
        if (i_ >= s_.size()) {
            i_ = start;
            fail("Invalid quoted string");
        }
        ++i_;
        return out;
    }

    MarkerOp marker_op() {
        static constexpr std::array<std::pair<std::string_view, MarkerOp>, 8> ops{{
            {"===", MarkerOp::arbitrary},
            {"==", MarkerOp::equal},
            {"~=", MarkerOp::compatible},
            {"!=", MarkerOp::not_equal},
            {"<=", MarkerOp::less_equal},
            {">=", MarkerOp::greater_equal},
            {"<", MarkerOp::less},
            {">", MarkerOp::greater},
        }};
        for (const auto& [text, op] : ops)
            if (s_.substr(i_, text.size()) == text) {
                i_ += text.size();
                return op;
            }
        if (take_keyword("in")) return MarkerOp::in;
        if (take_keyword("not")) {
            skip_ws();
            if (!take_keyword("in")) fail("Expected 'in' after 'not'");
            return MarkerOp::not_in;
        }
        fail("Expected marker operator, one of <=, <, !=, ==, >=, >, ~=, ===, in, not in");
    }
};

}  // namespace

Result<Marker> Marker::parse(std::string_view text) {
    try {
        return Marker(Parser(text).whole_marker());
    } catch (Error& e) {
        return std::move(e);
    }
}

Result<Requirement> Requirement::parse(std::string_view text) {
    try {
        return Parser(text).requirement();
    } catch (Error& e) {
        return std::move(e);
    }
}

}  // namespace envbox::pep
