#include "envbox/util/json.hpp"

#include <cstdio>

#include "envbox/util/printable.hpp"

namespace envbox {
namespace {

void write(std::string& out, const Json& v, int decimals) {
    switch (v.type()) {
        case Json::value_t::object: {
            out += '{';
            const char* sep = "";
            for (const auto& [key, member] : v.items()) {
                out += sep;
                out += json_quote(key);
                out += ": ";
                write(out, member, decimals);
                sep = ", ";
            }
            out += '}';
            return;
        }
        case Json::value_t::array: {
            out += '[';
            const char* sep = "";
            for (const auto& element : v) {
                out += sep;
                write(out, element, decimals);
                sep = ", ";
            }
            out += ']';
            return;
        }
        case Json::value_t::string:
            out += json_quote(v.get_ref<const Json::string_t&>());
            return;
        case Json::value_t::number_float: {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.*f", decimals, v.get<double>());
            out += buf;
            return;
        }
        default:  // null, booleans, integers: nlohmann writes them as JSON does
            out += v.dump();
    }
}

}  // namespace

std::string json_quote(std::string_view s) {
    std::string o = "\"";
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            // A hidden code point (NEL, U+2028, a bidi override) as \uXXXX: the same string to
            // a JSON reader, never raw on a terminal showing the report.
            if (auto u = decode_utf8(s, i); u && is_hidden_code_point(u->code_point)) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(u->code_point));
                o += buf;
                i += u->length - 1;
                continue;
            }
        }
        switch (c) {
            case '"':
                o += "\\\"";
                break;
            case '\\':
                o += "\\\\";
                break;
            case '\n':
                o += "\\n";
                break;
            case '\r':
                o += "\\r";
                break;
            case '\t':
                o += "\\t";
                break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    o += buf;
                } else {
                    o += static_cast<char>(c);
                }
        }
    }
    return o + "\"";
}

std::string json_line(const Json& value, int decimals) {
    std::string out;
    write(out, value, decimals);
    return out;
}

}  // namespace envbox
