#pragma once
// Shared machinery of the conformance runner: row bookkeeping and JSON helpers.

#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

namespace conformance {

using json = nlohmann::json;

/// Counts rows per `file section`, reports failures, honours DIVERGENCES.md.
struct Suite {
    std::string dir;
    bool verbose = false;
    std::set<std::string> divergences;  // "file section index"
    std::string file, section;
    std::size_t index = 0;
    std::map<std::string, std::pair<std::size_t, std::size_t>> counts;  // key -> checked, failed
    std::size_t total = 0, failed = 0, diverged = 0, shown = 0;

    json load(const std::string& name) {
        file = name;
        std::ifstream in(dir + "/" + name);
        if (!in) throw std::runtime_error("cannot read " + dir + "/" + name);
        return json::parse(in);
    }

    // Runs `check` over every element of `rows`, recording each as one row.
    template <class F>
    void rows(const json& data, const std::string& sec, F check) {
        section = sec;
        const json& items = data["sections"].at(sec);
        index = 0;
        for (const auto& row : items) {
            std::string why;
            bool ok = false;
            try {
                ok = check(row, why);
            } catch (const std::exception& e) {
                why = std::string("exception: ") + e.what();
            }
            record(ok, row, why);
            ++index;
        }
    }

    void record(bool ok, const json& row, const std::string& why) {
        auto& c = counts[file + " " + section];
        ++c.first;
        ++total;
        if (ok) return;
        std::string key = file + " " + section + " " + std::to_string(index);
        if (divergences.count(key)) {
            ++diverged;
            return;
        }
        ++c.second;
        ++failed;
        if (verbose || shown < 60) {
            ++shown;
            std::cout << "FAIL " << key << ": " << row.dump().substr(0, 300) << "\n     " << why
                      << "\n";
        }
    }
};

inline std::optional<bool> opt_bool(const json& j) {
    if (j.is_null()) return std::nullopt;
    return j.get<bool>();
}

void pep_sections(Suite& s);
void pylock_sections(Suite& s);
void wheel_sections(Suite& s);
void index_sections(Suite& s);

}  // namespace conformance
