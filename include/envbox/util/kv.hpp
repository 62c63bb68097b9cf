#pragma once
/// The one reader/writer of envbox's small line-based "key value" files: the HTTP cache header
/// (`envbox-http-cache 1`), the store's wheel file list (`envbox-wheel-files 1`), a generation's
/// info (`envbox-generation 1|2`) and the interpreter probe cache (`envbox-probe 1`, `key=value`).
///
/// API (use this; do not write another line parser):
///   kv::Reader r(text, path.string());          // `what` names the file in every error
///   kv::Reader r(text, what, '=');               // another separator (the probe's `key=value`)
///   kv::Reader r(text, what, ' ', {.max_line_bytes = 1 << 20, .max_lines = 4'000'000});
///   auto head = r.next();                        // line 1, the format header: compare head->text
///   while (auto l = r.next()) {                  // nullopt at the end of the text
///       if (l->text.empty()) break;              // a blank line ends a block (the cache header)
///       if (!l->has_separator) continue;         // or reject it: throw r.error("why")
///       use(l->key, l->value);                   // value: everything after the first separator
///   }
///   std::string_view body = r.rest();            // what follows (a cached body, record lines)
///   throw r.error("malformed package line");     // Error(integrity) "<what>: line N: <why>"
///
///   kv::Writer w("envbox-http-cache 1");         // the header line
///   w.add("etag", etag);                         // "etag <value>\n" (an empty value: "etag \n")
///   w.add_fields("package", {a, b, c});          // "package a b c\n" (fields joined by ' ')
///   w.line("raw record line");                   // a line as is, plus '\n'
///   w.blank();                                   // "\n": ends a block
///   w.raw(body);                                 // bytes as they are (a body, a probe's output)
///   std::string text = std::move(w).take();
///   kv::percent_encode(v) / kv::percent_decode(v) / kv::split_fields(rest): a generation v2's
///   values (every `%`, blank and control character written `%XX`) and its space-separated fields.
///
/// Byte-for-byte: a Writer writes exactly what it is given, in order, one '\n' per line (no
/// escaping unless the caller percent-encodes), so every format keeps its on-disk bytes and the
/// files already in a home still read. Lines end at '\n' only (a '\r' stays in the value), as
/// `std::getline` read them. A last line without its '\n' is still a line.
///
/// Bounds: a Reader refuses a line longer than `Limits::max_line_bytes` and more than
/// `Limits::max_lines` lines (counting the header) with an `Error` (integrity) naming the file;
/// `rest()` is never scanned, so a large body after a short header costs nothing. A Writer
/// refuses a key or value holding a '\n' (it would read back as two lines) and a key holding the
/// separator or nothing, with an `Error` (integrity) naming `what` when it was given one.
///
/// Not thread-safe per object; a Reader only views `text`, which must outlive it.

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/util/error.hpp"

namespace envbox::kv {

/// What a Reader accepts before it gives up on a file as damaged or hostile.
struct Limits {
    std::size_t max_line_bytes = 64u << 10;  ///< bytes of one line, without its '\n'
    std::size_t max_lines = 1u << 20;        ///< lines read through `next()`, the header included
};

/// One line as read: the key is what comes before the first separator, the value what follows.
struct Line {
    std::size_t number = 0;      ///< 1-based; the header is line 1
    std::string_view text;       ///< the whole line, without its '\n'
    std::string_view key;        ///< before the first separator (the whole line when it has none)
    std::string_view value;      ///< after the first separator (empty when it has none)
    bool has_separator = false;  ///< the line holds the separator at all
};

/// Reads a text line by line. Views `text`; never copies it.
class Reader {
  public:
    /// `what` names the file in errors (usually its path).
    Reader(std::string_view text, std::string what, char separator = ' ', Limits limits = {});

    /// The next line, or nullopt at the end of the text. Throws `Error` (integrity, naming the
    /// file and the line) for a line over `max_line_bytes` or past `max_lines`.
    std::optional<Line> next();

    /// The text after the last line `next()` returned (all of it before the first call).
    std::string_view rest() const { return text_.substr(pos_); }

    /// True when no line is left.
    bool at_end() const { return pos_ >= text_.size(); }

    /// The number of the last line returned (0 before the first).
    std::size_t line_number() const { return line_; }

    /// An error about the last line read: "<what>: line N: <why>" ("<what>: <why>" before any).
    Error error(std::string_view why, ErrorCode code = ErrorCode::integrity) const;

    const std::string& what() const { return what_; }

  private:
    std::string_view text_;
    std::string what_;
    char separator_;
    Limits limits_;
    std::size_t pos_ = 0;
    std::size_t line_ = 0;
};

/// Builds a text line by line, exactly as given (see the header comment).
class Writer {
  public:
    /// Starts with the `header` line (none when empty). `what` names the file or format in
    /// errors ("the HTTP cache entry of https://…").
    explicit Writer(std::string_view header, char separator = ' ', std::string what = {});

    /// "key<separator>value\n". Throws `Error` (integrity) for a '\n' in either, or a key that is
    /// empty or holds the separator.
    Writer& add(std::string_view key, std::string_view value);

    /// "key f1 f2 …\n": the fields joined by single blanks (the caller encodes them when a field
    /// may hold a blank). Same checks as `add`.
    Writer& add_fields(std::string_view key, std::initializer_list<std::string_view> fields);
    Writer& add_fields(std::string_view key, const std::vector<std::string_view>& fields);

    /// `text` and '\n'. Throws `Error` (integrity) for a '\n' in it.
    Writer& line(std::string_view text);

    /// An empty line: the end of a block.
    Writer& blank();

    /// `bytes` appended as they are (a body after a block, output already in the format).
    Writer& raw(std::string_view bytes);

    const std::string& text() const& { return out_; }
    std::string take() && { return std::move(out_); }

  private:
    void refuse(std::string_view why) const;

    std::string out_;
    char separator_;
    std::string what_;
};

/// `v` with every '%', blank or control character (<= 0x20, 0x7f) written as "%XX" (uppercase
/// hex): a value that can break neither a line nor a field.
std::string percent_encode(std::string_view v);

/// The inverse of `percent_encode` (either case of hex accepted); nullopt for a '%' not followed
/// by two hex digits.
std::optional<std::string> percent_decode(std::string_view v);

/// The fields of `line` split at each single blank ("a  b" gives "a", "", "b"; "" gives none).
std::vector<std::string_view> split_fields(std::string_view line);

}  // namespace envbox::kv
