#pragma once
// TOML text as written, by byte offsets (private to the lock layer): enough of a lexer to find
// keys, strings, punctuation, comments and line ends without being fooled by a `#`, `,` or `]`
// inside a string, and the line arithmetic of an edit that keeps every other byte as it was
// (manifest_edit.cpp). Only text toml++ has already accepted is read here, so malformed input
// needs no diagnosis.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lock/toml_reader.hpp"

namespace envbox::lock::text {

// A token of TOML text by byte offsets: enough of a lexer to find keys, strings, punctuation,
// comments and line ends without being fooled by a `#`, `,` or `]` inside a string. Only what
// toml++ has already accepted is lexed, so malformed input needs no diagnosis here.
struct Token {
    enum Kind { string, bare, punct, comment, newline, eof } kind = eof;
    std::size_t begin = 0, end = 0;
};

class Lexer {
  public:
    Lexer(std::string_view text, std::size_t at) : t_(text), i_(at) {}

    Token next() {
        while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t'))
            ++i_;
        Token tok{Token::eof, i_, i_};
        if (i_ >= t_.size()) return tok;
        const char c = t_[i_];
        if (c == '\n' || (c == '\r' && i_ + 1 < t_.size() && t_[i_ + 1] == '\n')) {
            tok.kind = Token::newline;
            i_ += c == '\r' ? 2 : 1;
        } else if (c == '#') {
            tok.kind = Token::comment;
            while (i_ < t_.size() && t_[i_] != '\n' && t_[i_] != '\r')
                ++i_;
        } else if (c == '"' || c == '\'') {
            tok.kind = Token::string;
            i_ = string_end(c);
        } else if (is_bare(c)) {
            tok.kind = Token::bare;
            while (i_ < t_.size() && is_bare(t_[i_]))
                ++i_;
        } else {
            tok.kind = Token::punct;
            ++i_;
        }
        tok.end = i_;
        return tok;
    }

  private:
    static bool is_bare(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    }

    // Past the string opening at i_ with quote `q`: one-line or multi-line, basic (escapes) or
    // literal; a multi-line string's closing quotes may be followed by up to two more.
    std::size_t string_end(char q) const {
        const std::string triple(3, q);
        const bool multi = t_.substr(i_, 3) == triple;
        std::size_t j = i_ + (multi ? 3 : 1);
        for (; j < t_.size(); ++j) {
            if (q == '"' && t_[j] == '\\') {
                ++j;
            } else if (multi ? t_.substr(j, 3) == triple : t_[j] == q) {
                j += multi ? 3 : 1;
                for (int extra = 0; multi && extra < 2 && j < t_.size() && t_[j] == q; ++extra)
                    ++j;
                return j;
            } else if (!multi && t_[j] == '\n') {
                return j;
            }
        }
        return j;
    }

    std::string_view t_;
    std::size_t i_;
};

std::string_view token_text(std::string_view t, const Token& tok);

/// A key as written, without its quotes (the names edited here need no escapes).
std::string key_text(std::string_view t, const Token& tok);

std::size_t line_begin(std::string_view t, std::size_t pos);

/// Where the line holding `pos` ends: its '\r' or '\n', or the end of the text.
std::size_t line_end(std::string_view t, std::size_t pos);

std::size_t past_break(std::string_view t, std::size_t pos);

/// The offset where 1-based line `line` starts.
std::size_t line_offset(std::string_view t, std::size_t line);

/// Only blanks between the start of its line and `pos`.
bool blank_before(std::string_view t, std::size_t pos);

/// Only blanks, and perhaps a comment, from `pos` to the end of its line.
bool rest_is_blank(std::string_view t, std::size_t pos);

std::string leading_blanks(std::string_view t, std::size_t pos);

std::string eol_of(std::string_view t);

std::string splice(std::string_view t, std::size_t at, std::size_t erase, std::string_view put);

/// On the line starting at `from`, the offset just past the `=` of the key `match` accepts (the
/// last segment of a dotted key counts: `environment.requirements = …`).
std::optional<std::size_t> find_value(std::string_view t, std::size_t from,
                                      const std::function<bool(const std::string&)>& match);

using KeyMatch = std::function<bool(const std::string&)>;

/// The first token of the value of the key `match` accepts on the line where `node` begins.
std::optional<Token> value_token(std::string_view t, const toml::node& node, const KeyMatch& match);

/// One string of an array as written: its quotes included, and the comma after it, if any.
struct Element {
    std::size_t begin = 0, end = 0;
    std::optional<std::size_t> comma;
};

struct ArrayText {
    std::size_t open = 0, close = 0;  // the '[' and the ']'
    std::vector<Element> elements;
    bool multiline = false;  // a line break between '[' and ']'
};

/// The array of strings whose '[' is at `open`.
std::optional<ArrayText> scan_array(std::string_view t, std::size_t open);

}  // namespace envbox::lock::text
