#include <catch2/catch.hpp>
#include <string>

#include "envbox/util/json.hpp"

// The one-line shape every `--json` report has had since the first release: ", " and ": "
// separators, members in the order set, bytes that are not UTF-8 passed through, seconds with
// a fixed number of decimals.
TEST_CASE("json_line writes reports on one line in the documented shape", "[json]") {
    using envbox::Json;
    struct Row {
        const char* what;
        Json value;
        int decimals;
        std::string expected;
    };
    Json ordered;
    ordered["z"] = 1;
    ordered["a"] = nullptr;
    ordered["m"] = Json::array({true, false});
    const Row rows[] = {
        {"empty object", Json::object(), 3, "{}"},
        {"empty array", Json::array(), 3, "[]"},
        {"insertion order", ordered, 3, "{\"z\": 1, \"a\": null, \"m\": [true, false]}"},
        {"nested", Json{{"store", {{"path", "/h"}, {"free_bytes", 18446744073709551615ull}}}}, 3,
         "{\"store\": {\"path\": \"/h\", \"free_bytes\": 18446744073709551615}}"},
        {"negative", Json{{"download_delta", -2960501}}, 3, "{\"download_delta\": -2960501}"},
        {"seconds", Json{{"seconds", 0.1}}, 3, "{\"seconds\": 0.100}"},
        {"rollback seconds", Json{{"seconds", 0.00012}}, 4, "{\"seconds\": 0.0001}"},
        {"escapes", Json("a\"b\\c\nd\re\tf\x01g\x1f"), 3,
         "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001f\""},
        {"short escapes nlohmann would use", Json("\b\f"), 3, "\"\\u0008\\u000c\""},
        {"not UTF-8", Json(std::string("gen-\xff\xfe")), 3, "\"gen-\xff\xfe\""},
        {"UTF-8", Json("train#1 → lock"), 3, "\"train#1 → lock\""},
        {"hidden code points", Json("a\x7f\xc2\x85\xe2\x80\xa8\xe2\x80\xae"), 3,
         "\"a\\u007f\\u0085\\u2028\\u202e\""},
        {"key escaped", Json{{"a\"b", 1}}, 3, "{\"a\\\"b\": 1}"},
    };
    for (const Row& r : rows) {
        INFO(r.what);
        CHECK(envbox::json_line(r.value, r.decimals) == r.expected);
    }
}
