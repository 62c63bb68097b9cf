#include "lock/toml_text.hpp"

namespace envbox::lock::text {

std::string_view token_text(std::string_view t, const Token& tok) {
    return t.substr(tok.begin, tok.end - tok.begin);
}

// A key as written, without its quotes (the names edited here need no escapes).
std::string key_text(std::string_view t, const Token& tok) {
    std::string_view k = token_text(t, tok);
    if (tok.kind == Token::string && k.size() >= 2) k = k.substr(1, k.size() - 2);
    return std::string(k);
}

std::size_t line_begin(std::string_view t, std::size_t pos) {
    while (pos > 0 && t[pos - 1] != '\n')
        --pos;
    return pos;
}

// Where the line holding `pos` ends: its '\r' or '\n', or the end of the text.
std::size_t line_end(std::string_view t, std::size_t pos) {
    while (pos < t.size() && t[pos] != '\n' && t[pos] != '\r')
        ++pos;
    return pos;
}

std::size_t past_break(std::string_view t, std::size_t pos) {
    if (pos < t.size() && t[pos] == '\r') ++pos;
    if (pos < t.size() && t[pos] == '\n') ++pos;
    return pos;
}

// The offset where 1-based line `line` starts.
std::size_t line_offset(std::string_view t, std::size_t line) {
    std::size_t pos = 0;
    for (std::size_t l = 1; l < line && pos < t.size(); ++l)
        pos = past_break(t, line_end(t, pos));
    return pos;
}

// Only blanks between the start of its line and `pos`.
bool blank_before(std::string_view t, std::size_t pos) {
    for (std::size_t i = line_begin(t, pos); i < pos; ++i)
        if (t[i] != ' ' && t[i] != '\t') return false;
    return true;
}

// Only blanks, and perhaps a comment, from `pos` to the end of its line.
bool rest_is_blank(std::string_view t, std::size_t pos) {
    Lexer lx(t, pos);
    Token tok = lx.next();
    if (tok.kind == Token::comment) tok = lx.next();
    return tok.kind == Token::newline || tok.kind == Token::eof;
}

std::string leading_blanks(std::string_view t, std::size_t pos) {
    std::size_t b = line_begin(t, pos), e = b;
    while (e < t.size() && (t[e] == ' ' || t[e] == '\t'))
        ++e;
    return std::string(t.substr(b, e - b));
}

std::string eol_of(std::string_view t) {
    return t.find("\r\n") != std::string_view::npos ? "\r\n" : "\n";
}

std::string splice(std::string_view t, std::size_t at, std::size_t erase, std::string_view put) {
    std::string s(t.substr(0, at));
    s += put;
    s += t.substr(at + erase);
    return s;
}

// On the line starting at `from`, the offset just past the `=` of the key `match` accepts (the
// last segment of a dotted key counts: `environment.requirements = …`).
std::optional<std::size_t> find_value(std::string_view t, std::size_t from,
                                      const std::function<bool(const std::string&)>& match) {
    Lexer lx(t, from);
    Token prev;
    for (Token tok = lx.next(); tok.kind != Token::newline && tok.kind != Token::eof;
         tok = lx.next()) {
        if (tok.kind == Token::punct && t[tok.begin] == '=' &&
            (prev.kind == Token::bare || prev.kind == Token::string) && match(key_text(t, prev)))
            return tok.end;
        prev = tok;
    }
    return std::nullopt;
}

// The first token of the value of the key `match` accepts on the line where `node` begins.
std::optional<Token> value_token(std::string_view t, const toml::node& node,
                                 const KeyMatch& match) {
    auto at = find_value(t, line_offset(t, node.source().begin.line), match);
    if (!at) return std::nullopt;
    Lexer lx(t, *at);
    return lx.next();
}

// The array of strings whose '[' is at `open`.
std::optional<ArrayText> scan_array(std::string_view t, std::size_t open) {
    ArrayText a;
    a.open = open;
    Lexer lx(t, open + 1);
    for (;;) {
        Token tok = lx.next();
        switch (tok.kind) {
            case Token::eof:
            case Token::bare:
                return std::nullopt;
            case Token::newline:
                a.multiline = true;
                break;
            case Token::comment:
                break;
            case Token::string:
                a.elements.push_back({tok.begin, tok.end, std::nullopt});
                break;
            case Token::punct:
                if (t[tok.begin] == ']') {
                    a.close = tok.begin;
                    return a;
                }
                if (t[tok.begin] != ',' || a.elements.empty() || a.elements.back().comma)
                    return std::nullopt;
                a.elements.back().comma = tok.begin;
                break;
        }
    }
}

}  // namespace envbox::lock::text
