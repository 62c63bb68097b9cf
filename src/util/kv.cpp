#include "envbox/util/kv.hpp"

namespace envbox::kv {

Reader::Reader(std::string_view text, std::string what, char separator, Limits limits)
    : text_(text), what_(std::move(what)), separator_(separator), limits_(limits) {}

std::optional<Line> Reader::next() {
    if (at_end()) return std::nullopt;
    if (line_ >= limits_.max_lines)
        throw Error(ErrorCode::integrity,
                    what_ + ": more than " + std::to_string(limits_.max_lines) + " lines");
    // Only as far as the longest line allowed is searched, so a huge line costs no more than
    // the limit.
    std::string_view window = text_.substr(pos_, limits_.max_line_bytes + 1);
    auto nl = window.find('\n');
    ++line_;
    if (nl == std::string_view::npos && window.size() > limits_.max_line_bytes)
        throw Error(ErrorCode::integrity, what_ + ": line " + std::to_string(line_) +
                                              " is longer than " +
                                              std::to_string(limits_.max_line_bytes) + " bytes");
    Line l;
    l.number = line_;
    l.text = window.substr(0, nl);
    pos_ += l.text.size() + (nl == std::string_view::npos ? 0 : 1);
    auto sep = l.text.find(separator_);
    l.has_separator = sep != std::string_view::npos;
    l.key = l.text.substr(0, sep);
    if (l.has_separator) l.value = l.text.substr(sep + 1);
    return l;
}

Error Reader::error(std::string_view why, ErrorCode code) const {
    if (line_ == 0) return Error(code, what_ + ": " + std::string(why));
    return Error(code, what_ + ": line " + std::to_string(line_) + ": " + std::string(why));
}

Writer::Writer(std::string_view header, char separator, std::string what)
    : separator_(separator), what_(std::move(what)) {
    if (!header.empty()) line(header);
}

void Writer::refuse(std::string_view why) const {
    throw Error(ErrorCode::integrity,
                (what_.empty() ? std::string("a record") : what_) + ": " + std::string(why));
}

Writer& Writer::add(std::string_view key, std::string_view value) {
    if (key.empty() || key.find_first_of(std::string{'\n', separator_}) != std::string_view::npos)
        refuse("the key '" + std::string(key) + "' cannot be written");
    if (value.find('\n') != std::string_view::npos)
        refuse("the value of " + std::string(key) + " holds a line break");
    out_.append(key);
    out_ += separator_;
    out_.append(value);
    out_ += '\n';
    return *this;
}

Writer& Writer::add_fields(std::string_view key, std::initializer_list<std::string_view> fields) {
    return add_fields(key, std::vector<std::string_view>(fields));
}

Writer& Writer::add_fields(std::string_view key, const std::vector<std::string_view>& fields) {
    std::string joined;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i) joined += ' ';
        joined.append(fields[i]);
    }
    return add(key, joined);
}

Writer& Writer::line(std::string_view text) {
    if (text.find('\n') != std::string_view::npos) refuse("a line holds a line break");
    out_.append(text);
    out_ += '\n';
    return *this;
}

Writer& Writer::blank() {
    out_ += '\n';
    return *this;
}

Writer& Writer::raw(std::string_view bytes) {
    out_.append(bytes);
    return *this;
}

std::string percent_encode(std::string_view v) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '%' || u <= 0x20 || u == 0x7f) {
            out += '%';
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    return out;
}

std::optional<std::string> percent_decode(std::string_view v) {
    auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    std::string out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] != '%') {
            out += v[i];
            continue;
        }
        if (i + 2 >= v.size()) return std::nullopt;
        int hi = digit(v[i + 1]), lo = digit(v[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi << 4 | lo);
        i += 2;
    }
    return out;
}

std::vector<std::string_view> split_fields(std::string_view line) {
    std::vector<std::string_view> out;
    while (!line.empty()) {
        auto sp = line.find(' ');
        out.push_back(line.substr(0, sp));
        if (sp == std::string_view::npos) break;
        line.remove_prefix(sp + 1);
    }
    return out;
}

}  // namespace envbox::kv
