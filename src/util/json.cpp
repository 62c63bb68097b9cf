#include "envbox/util/json.hpp"

#include <cstdio>

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
    for (unsigned char c : s) {
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
                if (c < 0x20) {
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
