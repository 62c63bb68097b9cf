// Conformance rows for wheel installation (wheel_install.json): RECORD rows, parsing and hash
// checks, shebang rewriting, entry points, Root-Is-Purelib, script names and member paths.

#include "conformance/suite.hpp"
#include "envbox/pep/wheel.hpp"
#include "envbox/util/sha256.hpp"

namespace conformance {

using namespace envbox;

void wheel_sections(Suite& s) {
    const json data = s.load("wheel_install.json");
    auto row_of = [](const json& r) {
        pep::RecordRow row;
        row.path = r["path"].get<std::string>();
        row.hash = r["hash"].is_null() ? "" : r["hash"].get<std::string>();
        row.size = r["size"].is_null()     ? ""
                   : r["size"].is_string() ? r["size"].get<std::string>()
                                           : std::to_string(r["size"].get<long long>());
        return row;
    };
    s.rows(data, "record_entry_valid", [&](const json& r, std::string& why) {
        auto err = pep::validate_record_row(row_of(r));
        if (err) why = err->message();
        return !err;
    });
    s.rows(data, "record_entry_invalid", [&](const json& r, std::string& why) {
        auto err = pep::validate_record_row(row_of(r));
        if (!err) return why = "accepted", false;
        for (const auto& m : r["error_mentions"])
            if (err->message().find(m.get<std::string>()) == std::string::npos)
                return why =
                           "error does not mention " + m.get<std::string>() + ": " + err->message(),
                       false;
        return true;
    });
    s.rows(data, "record_hash_validation", [&](const json& r, std::string& why) {
        std::string content = r["content"].get<std::string>();
        auto problem = pep::check_record_row(row_of(r), sha256(content), content.size());
        bool valid = !problem;
        if (problem) why = *problem;
        return valid == r["valid"].get<bool>();
    });
    s.rows(data, "record_wrong_element_count", [&](const json& r, std::string& why) {
        auto parsed = pep::parse_record(r["line"].get<std::string>() + "\n");
        if (parsed) why = "accepted";
        return !parsed;
    });
    s.rows(data, "record_parse", [&](const json& r, std::string& why) {
        std::string text;
        for (const auto& l : r["lines"])
            text += l.get<std::string>() + "\n";
        auto parsed = pep::parse_record(text);
        if (!parsed) return why = parsed.error().message(), false;
        json got = json::array();
        for (const auto& row : *parsed)
            got.push_back({row.path, row.hash, row.size});
        why = got.dump();
        return got == r["expected"];
    });
    s.rows(data, "shebang_rewrite", [&](const json& r, std::string& why) {
        std::string got =
            pep::rewrite_shebang(r["input"].get<std::string>(), r["python"].get<std::string>());
        why = json(got).dump();
        return got == r["expected"].get<std::string>();
    });
    s.rows(data, "entry_points_parse", [&](const json& r, std::string& why) {
        auto parsed = pep::parse_entry_points(r["entry_points_txt"].get<std::string>());
        if (!parsed) return why = parsed.error().message(), false;
        json got = json::array();
        for (const auto& e : *parsed)
            got.push_back({e.name, e.module, e.attr, e.gui ? "gui" : "console"});
        why = got.dump();
        return got == r["expected"];
    });
    s.rows(data, "entry_points_pip_console_scripts", [&](const json& r, std::string& why) {
        std::string line = r["console_scripts_line"].get<std::string>();
        auto parsed = pep::parse_entry_points("[console_scripts]\n" + line +
                                              "\n[section]\ncommon:one = module:func\n");
        if (!parsed) return why = parsed.error().message(), false;
        auto sep = line.find(" = ");
        if (parsed->size() != 1) return why = "expected one entry", false;
        const auto& e = parsed->front();
        why = e.name + " = " + e.module + ":" + e.attr;
        return e.name == line.substr(0, sep) && e.module + ":" + e.attr == line.substr(sep + 3);
    });
    s.rows(data, "root_is_purelib", [&](const json& r, std::string& why) {
        auto info = pep::parse_wheel_info("Wheel-Version: 1.0\n" +
                                          r["wheel_metadata"].get<std::string>() + "\n");
        if (!info) return why = info.error().message(), false;
        return info->root_is_purelib == r["root_is_purelib"].get<bool>();
    });
    // The two script-name sections are single objects: one row per name.
    for (const char* section : {"script_name_in_tree", "script_name_escapes"}) {
        bool escapes = std::string(section) == "script_name_escapes";
        s.section = section;
        s.index = 0;
        for (const auto& name : data["sections"][section]["names"]) {
            bool got = pep::script_name_escapes(name.get<std::string>());
            s.record(got == escapes, name, got ? "escapes" : "stays inside");
            ++s.index;
        }
    }
    s.rows(data, "invalid_entry_point_lines", [&](const json& r, std::string& why) {
        auto parsed = pep::parse_entry_points("[" + r["section"].get<std::string>() + "]\n" +
                                              r["line"].get<std::string>() + "\n");
        if (parsed) why = "accepted";
        return !parsed;
    });
    s.rows(data, "archive_member_bad_paths", [&](const json& r, std::string& why) {
        auto safe = pep::safe_member_path(r.get<std::string>());
        if (safe) why = "accepted as " + *safe;
        return !safe;
    });
}

}  // namespace conformance
