// Conformance rows for the pep layer: versions, specifiers, local versions, markers,
// requirements, tags, names and file names.

#include <algorithm>
#include <sstream>

#include "conformance/suite.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/pep/marker.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/pep/specifier.hpp"
#include "envbox/pep/tags.hpp"
#include "envbox/pep/version.hpp"

namespace conformance {
namespace {

using namespace envbox::pep;

Candidate candidate(const json& j) {
    if (j.is_object())
        return Candidate::from_version(*Version::parse(j.at("parsed").get<std::string>()));
    return Candidate::from_text(j.get<std::string>());
}

std::vector<std::string> tag_strs(const std::vector<Tag>& tags) {
    std::vector<std::string> out;
    for (const auto& t : tags)
        out.push_back(t.str());
    return out;
}

std::vector<int> int_list(const json& j) {
    return j.get<std::vector<int>>();
}

std::string show(const std::vector<std::string>& v) {
    std::string out = "[";
    for (const auto& s : v)
        out += s + " ";
    return out + "]";
}

void versions(Suite& s) {
    json d = s.load("versions.json");
    auto normalizes = [](const json& r, std::string& why) {
        auto v = Version::parse(r["input"].get<std::string>());
        if (!v) return why = v.error().message(), false;
        why = "got " + v->str();
        return v->str() == r["normalized"].get<std::string>();
    };
    s.rows(d, "valid", normalizes);
    s.rows(d, "normalization", normalizes);
    s.rows(d, "invalid", [](const json& r, std::string& why) {
        why = "accepted";
        return !Version::try_parse(r.get<std::string>());
    });
    s.rows(d, "sorted_ascending", [&](const json& r, std::string& why) {
        // Each row checks all six relations against every other row of the list.
        const json& all = d["sections"]["sorted_ascending"];
        auto a = *Version::parse(r.get<std::string>());
        for (std::size_t k = 0; k < all.size(); ++k) {
            auto b = *Version::parse(all[k].get<std::string>());
            auto expect = s.index < k   ? std::strong_ordering::less
                          : s.index > k ? std::strong_ordering::greater
                                        : std::strong_ordering::equal;
            if ((a <=> b) != expect || (a == b) != (expect == 0) || (a < b) != (expect < 0) ||
                (a >= b) != (expect >= 0)) {
                why = "wrong order against " + all[k].get<std::string>();
                return false;
            }
        }
        return true;
    });
    s.rows(d, "equal_pairs", [](const json& r, std::string&) {
        return *Version::parse(r[0].get<std::string>()) == *Version::parse(r[1].get<std::string>());
    });
    s.rows(d, "attributes", [](const json& r, std::string& why) {
        auto v = *Version::parse(r["version"].get<std::string>());
        const std::string attr = r["attribute"];
        const json& e = r["expected"];
        json got;
        if (attr == "public")
            got = v.public_str();
        else if (attr == "base_version")
            got = v.base_str();
        else if (attr == "epoch")
            got = v.epoch();
        else if (attr == "release")
            got = v.release();
        else if (attr == "local")
            got = v.has_local() ? json(v.local_str()) : json(nullptr);
        else if (attr == "pre") {
            static const char* names[] = {"a", "b", "rc"};
            got = v.pre() ? json::array({names[static_cast<int>(v.pre()->kind)], v.pre()->number})
                          : json(nullptr);
        } else if (attr == "dev")
            got = v.dev() ? json(*v.dev()) : json(nullptr);
        else if (attr == "post")
            got = v.post() ? json(*v.post()) : json(nullptr);
        else if (attr == "is_prerelease")
            got = v.is_prerelease();
        else if (attr == "is_postrelease")
            got = v.is_postrelease();
        else if (attr == "is_devrelease")
            got = v.is_devrelease();
        why = "got " + got.dump();
        return got == e;
    });
    s.rows(d, "canonicalize_version", [](const json& r, std::string& why) {
        const json& in = r["input"];
        std::string text = in.is_object() ? in["parsed"].get<std::string>() : in.get<std::string>();
        std::string got = canonicalize_version(text, r["strip_trailing_zero"].get<bool>());
        why = "got " + got;
        return got == r["expected"].get<std::string>();
    });
    s.rows(d, "from_parts", [](const json& r, std::string& why) {
        const json& p = r["parts"];
        auto get_u = [&](const char* k) -> std::optional<std::uint64_t> {
            if (!p.contains(k) || p[k].is_null()) return std::nullopt;
            return p[k].get<std::uint64_t>();
        };
        std::optional<Version::Pre> pre;
        if (p.contains("pre") && !p["pre"].is_null()) {
            auto parsed = Version::parse("0" + p["pre"][0].get<std::string>() +
                                         std::to_string(p["pre"][1].get<int>()));
            pre = parsed->pre();
        }
        std::vector<LocalSegment> local;
        if (p.contains("local") && !p["local"].is_null())
            local = *parse_local_label(p["local"].get<std::string>());
        Version v(p["release"].get<std::vector<std::uint64_t>>(), get_u("epoch").value_or(0), pre,
                  get_u("post"), get_u("dev"), local);
        why = "got " + v.str();
        return v == *Version::parse(r["equals"].get<std::string>());
    });
}

// Builds the object a row's `kind` names and answers contains/filter through it.
struct AnySpec {
    std::optional<Specifier> one;
    std::optional<SpecifierSet> set;
    static AnySpec make(const std::string& kind, const std::string& text, std::optional<bool> pre) {
        AnySpec a;
        if (kind == "Specifier")
            a.one = *Specifier::parse(text, pre);
        else
            a.set = *SpecifierSet::parse(text, pre);
        return a;
    }
    bool contains(const Candidate& c, std::optional<bool> pre, bool installed) const {
        return one ? one->contains(c, pre, installed) : set->contains(c, pre, installed);
    }
    std::vector<std::size_t> filter(const std::vector<Candidate>& cs,
                                    std::optional<bool> pre) const {
        if (set) return set->filter_indices(cs, pre);
        // A single clause filters as the set holding just that clause.
        SpecifierSet s = *SpecifierSet::parse(
            one->str(), one->prereleases() == std::nullopt ? std::nullopt : one->prereleases());
        return s.filter_indices(cs, pre);
    }
};

void specifiers(Suite& s) {
    json d = s.load("specifiers.json");
    s.rows(d, "valid", [](const json& r, std::string& why) {
        auto sp = SpecifierSet::parse(r.get<std::string>());
        if (!sp) why = sp.error().message();
        return sp.ok() && Specifier::parse(r.get<std::string>()).ok();
    });
    s.rows(d, "invalid", [](const json& r, std::string& why) {
        why = "accepted";
        return !Specifier::parse(r.get<std::string>()).ok();
    });
    s.rows(d, "parts", [](const json& r, std::string&) {
        auto sp = *Specifier::parse(r["specifier"].get<std::string>());
        return std::string(operator_str(sp.op())) == r["operator"].get<std::string>() &&
               sp.version_text() == r["version"].get<std::string>();
    });
    s.rows(d, "str", [](const json& r, std::string& why) {
        std::string in = r["input"];
        std::string got =
            r["kind"] == "Specifier" ? Specifier::parse(in)->str() : SpecifierSet::parse(in)->str();
        why = "got " + got;
        return got == r["expected"].get<std::string>();
    });
    s.rows(d, "implies_prereleases", [](const json& r, std::string&) {
        return Specifier::parse(r["specifier"].get<std::string>())->implies_prereleases() ==
               r["expected"].get<bool>();
    });
    s.rows(d, "length", [](const json& r, std::string&) {
        return SpecifierSet::parse(r["specifier_set"].get<std::string>())->size() ==
               r["length"].get<std::size_t>();
    });
    s.rows(d, "contains", [](const json& r, std::string& why) {
        auto a = AnySpec::make(r["kind"], r["specifier"], opt_bool(r["configured_prereleases"]));
        bool got = a.contains(candidate(r["version"]), opt_bool(r["prereleases"]),
                              opt_bool(r["installed"]).value_or(false));
        why = std::string("got ") + (got ? "true" : "false");
        return got == r["expected"].get<bool>();
    });
    s.rows(d, "filter", [](const json& r, std::string& why) {
        auto a = AnySpec::make(r["kind"], r["specifier"], opt_bool(r["configured_prereleases"]));
        std::vector<Candidate> cs;
        for (const auto& c : r["input"])
            cs.push_back(candidate(c));
        json got = json::array();
        for (auto k : a.filter(cs, opt_bool(r["prereleases"])))
            got.push_back(r["input"][k]);
        why = "got " + got.dump();
        return got == r["expected"];
    });
    s.rows(d, "equality", [](const json& r, std::string&) {
        bool eq = r["kind"] == "Specifier"
                      ? *Specifier::parse(r["left"].get<std::string>()) ==
                            *Specifier::parse(r["right"].get<std::string>())
                      : *SpecifierSet::parse(r["left"].get<std::string>()) ==
                            *SpecifierSet::parse(r["right"].get<std::string>());
        return eq == r["equal"].get<bool>();
    });
    s.rows(d, "combine", [](const json& r, std::string& why) {
        auto got = SpecifierSet::parse(r["left"].get<std::string>())
                       ->intersect(*SpecifierSet::parse(r["right"].get<std::string>()));
        why = "got " + got->str();
        return got->str() == SpecifierSet::parse(r["expected"].get<std::string>())->str();
    });
    s.rows(d, "set_relations", [](const json& r, std::string& why) {
        auto left = *SpecifierSet::parse(r["left"].get<std::string>());
        auto right = *SpecifierSet::parse(r["right"].get<std::string>());
        const std::string rel = r["relation"];
        bool got = rel == "is_subset"     ? left.is_subset(right)
                   : rel == "is_superset" ? left.is_superset(right)
                                          : left.is_disjoint(right);
        why = std::string("got ") + (got ? "true" : "false");
        return got == r["expected"].get<bool>();
    });
    s.rows(d, "satisfiable", [](const json& r, std::string& why) {
        auto set = *SpecifierSet::parse(r["specifier_set"].get<std::string>(),
                                        opt_bool(r["configured_prereleases"]));
        bool got = set.is_satisfiable();
        why = std::string("got ") + (got ? "true" : "false");
        return got == r["satisfiable"].get<bool>();
    });
    // oracle_grid: one row per (specifier set, item, query).
    const json& grid = d["sections"]["oracle_grid"];
    std::vector<Candidate> items;
    for (const auto& i : grid["items"])
        items.push_back(candidate(i));
    s.section = "oracle_grid";
    s.index = 0;
    for (const auto& row : grid["rows"]) {
        auto set = *SpecifierSet::parse(row["specifier_set"].get<std::string>());
        const std::pair<const char*, std::optional<bool>> modes[] = {
            {"default", std::nullopt}, {"prereleases_true", true}, {"prereleases_false", false}};
        for (const auto& [suffix, pre] : modes) {
            const json& want = row[std::string("contains_") + suffix];
            for (std::size_t k = 0; k < items.size(); ++k) {
                bool got = set.contains(items[k], pre);
                s.record(got == want[k].get<bool>(), row["specifier_set"],
                         std::string("contains_") + suffix + " " + items[k].text);
            }
            json got = json::array();
            for (auto k : set.filter_indices(items, pre))
                got.push_back(grid["items"][k]);
            s.record(got == row[std::string("filter_") + suffix], row["specifier_set"],
                     std::string("filter_") + suffix + " got " + got.dump());
        }
        ++s.index;
    }
}

void local_versions(Suite& s) {
    json d = s.load("derived_local_versions.json");
    s.rows(d, "sorted_ascending", [&](const json& r, std::string& why) {
        // Derived by sorting, so neighbours may be equal (`+cu128` and `+CU128`).
        const json& all = d["sections"]["sorted_ascending"];
        auto a = *Version::parse(r.get<std::string>());
        for (std::size_t k = 0; k < all.size(); ++k) {
            auto b = *Version::parse(all[k].get<std::string>());
            bool ok = s.index < k ? a <= b : s.index > k ? a >= b : a == b;
            if (!ok) return why = "wrong order against " + all[k].get<std::string>(), false;
        }
        return true;
    });
    s.rows(d, "versions", [](const json& r, std::string& why) {
        auto v = *Version::parse(r["input"].get<std::string>());
        json got = {{"input", r["input"]},
                    {"normalized", v.str()},
                    {"public", v.public_str()},
                    {"local", v.has_local() ? json(v.local_str()) : json(nullptr)},
                    {"base_version", v.base_str()},
                    {"is_prerelease", v.is_prerelease()}};
        why = "got " + got.dump();
        return got == r;
    });
    // The candidates' order is the order of the keys in the file, which `json` (a sorted map)
    // loses: read this section again keeping it.
    std::ifstream in(s.dir + "/derived_local_versions.json");
    const auto ordered = nlohmann::ordered_json::parse(in)["sections"]["specifiers"];
    s.rows(d, "specifiers", [&](const json& r, std::string& why) {
        auto set = *SpecifierSet::parse(r["specifier_set"].get<std::string>());
        std::vector<Candidate> cs;
        std::vector<std::string> names;
        for (const auto& [text, expect] : ordered[s.index]["contains_prereleases_true"].items()) {
            auto c = Candidate::from_text(text);
            if (set.contains(c, true) != expect.get<bool>())
                return why = "contains(true) " + text, false;
            if (set.contains(c, false) != r["contains_prereleases_false"][text].get<bool>())
                return why = "contains(false) " + text, false;
            cs.push_back(c);
            names.push_back(text);
        }
        std::vector<std::string> got;
        for (auto k : set.filter_indices(cs))
            got.push_back(names[k]);
        why = "filter got " + show(got);
        return got == r["filter_default"].get<std::vector<std::string>>();
    });
}

MarkerEnvironment environment_from(const json& j) {
    MarkerEnvironment env;
    for (const auto& [k, v] : j.items()) {
        if (v.is_null()) continue;  // an explicitly absent variable
        if (v.is_object()) {
            std::set<std::string> items;
            for (const auto& x : v["$set"])
                items.insert(canonicalize_name(x.get<std::string>()));
            (k == "extras" ? env.extras : env.dependency_groups) = items;
        } else {
            env.set(k, v.get<std::string>());
        }
    }
    return env;
}

void markers(Suite& s) {
    json d = s.load("markers.json");
    auto parses = [](const json& r, std::string& why) {
        auto m = Marker::parse(r.get<std::string>());
        if (!m) why = m.error().message();
        return m.ok();
    };
    s.rows(d, "valid", parses);
    s.rows(d, "valid_legacy_names", parses);
    s.rows(d, "invalid", [](const json& r, std::string& why) {
        auto m = Marker::parse(r["input"].get<std::string>());
        if (m) why = "accepted as " + m->str();
        return !m.ok();
    });
    s.rows(d, "trailing_whitespace_equivalent", [](const json& r, std::string&) {
        return *Marker::parse(r["input"].get<std::string>()) ==
               *Marker::parse(r["equals"].get<std::string>());
    });
    s.rows(d, "str", [](const json& r, std::string& why) {
        auto got = Marker::parse(r["input"].get<std::string>())->str();
        why = "got " + got;
        return got == r["expected"].get<std::string>();
    });
    s.rows(d, "not_equal", [](const json& r, std::string&) {
        return !(*Marker::parse(r["left"].get<std::string>()) ==
                 *Marker::parse(r["right"].get<std::string>()));
    });
    s.rows(d, "canonical_str", [](const json& r, std::string& why) {
        auto got = Marker::parse(r["input"].get<std::string>())->str();
        why = "got " + got;
        return got == r["str"].get<std::string>();
    });
    s.rows(d, "evaluate", [](const json& r, std::string& why) {
        auto m = Marker::parse(r["marker"].get<std::string>());
        if (!m) return why = m.error().message(), false;
        // effective_environment is the test's environment after the reference's host
        // defaults filled in what it left out; evaluation never looks at this host.
        MarkerEnvironment env = environment_from(r["effective_environment"]);
        const std::string ctx = r["context"];
        MarkerContext context = ctx == "metadata"    ? MarkerContext::metadata
                                : ctx == "lock_file" ? MarkerContext::lock_file
                                                     : MarkerContext::requirement;
        auto got = m->evaluate(env, context);
        if (r.contains("error")) {
            if (got) why = std::string("evaluated to ") + (*got ? "true" : "false");
            return !got.ok();
        }
        if (!got) return why = got.error().describe(), false;
        why = std::string("got ") + (*got ? "true" : "false");
        return *got == r["expected"].get<bool>();
    });
}

void requirements(Suite& s) {
    json d = s.load("requirements.json");
    s.rows(d, "valid", [](const json& r, std::string& why) {
        auto req = Requirement::parse(r["input"].get<std::string>());
        if (!req) return why = req.error().message(), false;
        json got = {{"input", r["input"]},
                    {"name", req->name},
                    {"extras", req->extras},
                    {"url", req->url ? json(*req->url) : json(nullptr)},
                    {"specifier", req->specifier.str()},
                    {"marker", req->marker ? json(req->marker->str()) : json(nullptr)},
                    {"str", req->str()}};
        why = "got " + got.dump();
        return got == r;
    });
    s.rows(d, "invalid", [](const json& r, std::string& why) {
        auto req = Requirement::parse(r["input"].get<std::string>());
        if (req) why = "accepted as " + req->str();
        return !req.ok();
    });
    s.rows(d, "str", [](const json& r, std::string& why) {
        auto got = Requirement::parse(r["input"].get<std::string>())->str();
        why = "got " + got;
        return got == r["expected"].get<std::string>();
    });
    s.rows(d, "pairs", [](const json& r, std::string&) {
        auto a = *Requirement::parse(r["left"].get<std::string>());
        auto b = *Requirement::parse(r["right"].get<std::string>());
        const std::string rel = r["relation"];
        if (rel == "equal") return a == b && a.str() == b.str();
        if (rel == "equal_but_different_str") return a == b && a.str() != b.str();
        return !(a == b);
    });
}

void tags(Suite& s) {
    json d = s.load("tags.json");
    auto options = [](const json& r) {
        TagParseOptions o;
        if (r.contains("validate_order")) o.validate_order = r["validate_order"].get<bool>();
        if (r.contains("limit")) o.limit = r["limit"].get<std::int64_t>();
        return o;
    };
    s.rows(d, "parse_tag", [&](const json& r, std::string& why) {
        auto t = parse_tag(r["input"].get<std::string>(), options(r));
        if (!t) return why = t.error().message(), false;
        why = "got " + show(tag_strs(*t));
        return tag_strs(*t) == r["expected"].get<std::vector<std::string>>();
    });
    s.rows(d, "parse_tag_invalid", [&](const json& r, std::string& why) {
        why = "accepted";
        return !parse_tag(r["input"].get<std::string>(), options(r)).ok();
    });
    auto strs = [](const json& j) { return j.get<std::vector<std::string>>(); };
    s.rows(d, "cpython_tags", [&](const json& r, std::string& why) {
        const json& a = r["args"];
        auto got = tag_strs(
            cpython_tags(int_list(a["python_version"]), strs(a["abis"]), strs(a["platforms"])));
        why = "got " + show(got);
        return got == strs(r["expected"]);
    });
    s.rows(d, "compatible_tags", [&](const json& r, std::string& why) {
        const json& a = r["args"];
        std::optional<std::string> interp;
        if (a.contains("interpreter")) interp = a["interpreter"].get<std::string>();
        auto got =
            tag_strs(compatible_tags(int_list(a["python_version"]), interp, strs(a["platforms"])));
        why = "got " + show(got);
        return got == strs(r["expected"]);
    });
    s.rows(d, "generic_tags", [&](const json& r, std::string& why) {
        const json& a = r["args"];
        auto got = tag_strs(generic_tags(a["interpreter"], strs(a["abis"]), strs(a["platforms"])));
        why = "got " + show(got);
        return got == strs(r["expected"]);
    });
    s.rows(d, "pure_python_tags", [&](const json& r, std::string& why) {
        auto got = tag_strs(pure_python_tags(int_list(r["args"]["python_version"])));
        why = "got " + show(got);
        return got == strs(r["expected"]);
    });
    s.rows(d, "compatible_tags_selector", [&](const json& r, std::string& why) {
        std::vector<Tag> supported;
        for (const auto& p : strs(r["supported_platforms"]))
            supported.push_back({"py3", "none", p});
        TargetTags target(supported);
        std::vector<std::pair<std::size_t, std::string>> ranked;
        for (const auto& c : strs(r["candidates"])) {
            auto t = parse_tag("py3-none-" + c);
            if (auto rank = target.best_rank(*t)) ranked.emplace_back(*rank, c);
        }
        std::stable_sort(ranked.begin(), ranked.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
        std::vector<std::string> got;
        for (const auto& [rank, c] : ranked)
            got.push_back(c);
        why = "got " + show(got);
        return got == strs(r["expected"]);
    });
    s.section = "derived_manylinux_platforms_x86_64";
    s.index = 0;
    for (const auto& [key, list] : d["sections"]["derived_manylinux_platforms_x86_64"].items()) {
        int minor = std::stoi(key.substr(std::string("glibc_2_").size()));
        s.record(manylinux_platforms(2, minor, "x86_64") == strs(list), key, "platform list");
        ++s.index;
    }
    s.section = "derived_priority";
    s.index = 0;
    const json& pri = d["sections"]["derived_priority"];
    s.record(*target_platforms("manylinux_2_28_x86_64") == strs(pri["platforms_used"]),
             "platforms_used", "platform list");
    ++s.index;
    for (const auto& [key, list] : pri["lists"].items()) {
        // cp312_glibc_2_28_x86_64, cp313t_glibc_2_28_x86_64, …
        bool threaded = key[5] == 't';
        int minor = std::stoi(key.substr(3, 2));
        auto target = *TargetTags::cpython(3, minor, "manylinux_2_28_x86_64", threaded);
        auto got = tag_strs(target.tags());
        std::string why = "first difference at ";
        for (std::size_t k = 0; k < std::min(got.size(), list.size()); ++k)
            if (got[k] != list[k].get<std::string>()) {
                why += std::to_string(k) + ": " + got[k] + " vs " + list[k].get<std::string>();
                break;
            }
        s.record(got == strs(list), key, why + " (sizes " + std::to_string(got.size()) + ")");
        ++s.index;
    }
}

void names(Suite& s) {
    json d = s.load("names_and_filenames.json");
    s.rows(d, "canonicalize_name", [](const json& r, std::string&) {
        return canonicalize_name(r["input"].get<std::string>()) == r["expected"].get<std::string>();
    });
    s.rows(d, "canonicalize_name_invalid", [](const json& r, std::string&) {
        std::string in = r["input"];
        return !is_valid_name(in) &&
               canonicalize_name(in) == r["lenient_result"].get<std::string>();
    });
    s.rows(d, "is_normalized_name", [](const json& r, std::string&) {
        return is_normalized_name(r["name"].get<std::string>()) == r["is_normalized"].get<bool>();
    });
    s.rows(d, "wheel_filename", [](const json& r, std::string& why) {
        auto w = WheelFilename::parse(r["filename"].get<std::string>());
        if (!w) return why = w.error().message(), false;
        json build = w->build ? json::array({w->build->number, w->build->rest}) : json(nullptr);
        json got = {{"filename", r["filename"]},
                    {"name", w->canonical_name},
                    {"version", w->version.str()},
                    {"build", build},
                    {"tags", tag_strs(w->tags)}};
        why = "got " + got.dump();
        return got == r;
    });
    auto rejects = [](const json& r, std::string& why) {
        why = "accepted";
        return !WheelFilename::parse(r.get<std::string>()).ok();
    };
    auto accepts = [](const json& r, std::string& why) {
        auto w = WheelFilename::parse(r.get<std::string>());
        if (!w) why = w.error().message();
        return w.ok();
    };
    s.rows(d, "wheel_filename_invalid", rejects);
    s.rows(d, "wheel_filename_unsorted_tags_valid", accepts);
    s.rows(d, "wheel_filename_installer", [](const json& r, std::string& why) {
        auto w = WheelFilename::parse(r["filename"].get<std::string>());
        if (!w) return why = w.error().message(), false;
        std::string build;
        if (w->build) build = std::to_string(w->build->number) + w->build->rest;
        json got = {{"filename", r["filename"]},
                    {"distribution", w->name},
                    {"version", w->version_text},
                    {"build_tag", w->build ? json(build) : json(nullptr)},
                    {"tag", w->tag_text}};
        why = "got " + got.dump();
        return got == r;
    });
    s.rows(d, "wheel_filename_invalid_installer", rejects);
    s.rows(d, "wheel_filename_pip_valid", accepts);
    s.rows(d, "wheel_filename_pip_invalid", rejects);
    s.rows(d, "sdist_filename", [](const json& r, std::string& why) {
        auto f = SdistFilename::parse(r["filename"].get<std::string>());
        if (!f) return why = f.error().message(), false;
        return f->canonical_name == r["name"].get<std::string>() &&
               f->version.str() == r["version"].get<std::string>();
    });
    s.rows(d, "sdist_filename_invalid", [](const json& r, std::string& why) {
        why = "accepted";
        return !SdistFilename::parse(r.get<std::string>()).ok();
    });
}

}  // namespace

void pep_sections(Suite& s) {
    versions(s);
    specifiers(s);
    local_versions(s);
    markers(s);
    requirements(s);
    tags(s);
    names(s);
}

}  // namespace conformance
