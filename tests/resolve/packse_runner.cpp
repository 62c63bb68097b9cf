// Runs the packse resolver scenarios (tests/data/corpus/packse/scenarios) against envbox's
// resolver with an in-memory package source built from each scenario, and compares with the
// expected outcome. Scenarios needing universal (multi-platform) resolution are skipped: envbox
// locks for one target. Known differences are listed, with reasons, in packse_expectations.txt;
// anything else that fails makes the run fail.
//
//   envbox_packse SCENARIO_DIR EXPECTATIONS_FILE [-v]

#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "envbox/pep/name.hpp"
#include "envbox/pep/tags.hpp"
#include "envbox/resolve/resolver.hpp"

namespace fs = std::filesystem;
using namespace envbox;

namespace {

struct Version {
    std::vector<std::string> requires_dist;
    std::map<std::string, std::vector<std::string>> extras;
    std::optional<std::string> requires_python = ">=3.12";
    bool wheel = true, yanked = false;
    std::vector<std::string> wheel_tags;
};

class World : public resolve::PackageSource {
  public:
    std::map<std::string, std::map<std::string, Version>> packages;  // name -> version text -> data
    pep::MarkerEnvironment env;
    std::string python_full;
    std::optional<pep::TargetTags> tags;
    std::set<std::string> no_binary;
    /// Requires-Python only in the metadata (an index page without `data-requires-python`):
    /// reported by `dependencies`, not `versions`. The outcome must be the same.
    bool metadata_requires_python = false;

    std::string python_mismatch(const Version& v) const {
        if (!v.requires_python) return "";
        auto spec = pep::SpecifierSet::parse(*v.requires_python).value();
        if (spec.contains(pep::Version::parse(python_full).value(), true)) return "";
        return "requires Python " + *v.requires_python + " (the target is " + python_full + ")";
    }

    std::vector<resolve::Candidate> versions(const std::string& name) override {
        std::vector<resolve::Candidate> out;
        auto it = packages.find(name);
        if (it == packages.end()) return out;
        for (const auto& [text, v] : it->second) {
            resolve::Candidate c;
            c.version = pep::Version::parse(text).value();
            c.yanked = v.yanked;
            if (!metadata_requires_python) c.unusable = python_mismatch(v);
            if (c.unusable.empty() && (!v.wheel || no_binary.count(name)))
                c.unusable = "has no wheel (envbox installs wheels and does not build sdists)";
            if (c.unusable.empty() && !v.wheel_tags.empty()) {
                bool ok = false;
                for (const auto& t : v.wheel_tags) {
                    auto parsed = pep::parse_tag(t);
                    if (!parsed) continue;
                    for (const auto& tag : *parsed)
                        ok = ok || tags->rank(tag).has_value();
                }
                if (!ok) c.unusable = "has no wheel for the target";
            }
            out.push_back(std::move(c));
        }
        return out;
    }

    resolve::Dependencies dependencies(const std::string& name,
                                       const pep::Version& version) override {
        resolve::Dependencies d;
        for (const auto& [text, v] : packages[name]) {
            if (!(pep::Version::parse(text).value() == version)) continue;
            if (metadata_requires_python) d.unusable = python_mismatch(v);
            for (const auto& r : v.requires_dist)
                d.requires_dist.push_back(pep::Requirement::parse(r).value());
            for (const auto& [extra, reqs] : v.extras) {
                d.provides_extra.insert(pep::canonicalize_name(extra));
                for (const auto& r : reqs) {
                    auto req = pep::Requirement::parse(r).value();
                    std::string marker = "extra == \"" + extra + "\"";
                    if (req.marker) marker = "(" + req.marker->str() + ") and " + marker;
                    auto full =
                        pep::Requirement::parse(r.substr(0, r.find(';')) + " ; " + marker).value();
                    d.requires_dist.push_back(std::move(full));
                }
            }
        }
        return d;
    }
};

template <class View>
std::vector<std::string> strings(const View& n) {
    std::vector<std::string> out;
    if (auto* a = n.as_array())
        for (const auto& e : *a)
            if (auto s = e.template value<std::string>()) out.push_back(*s);
    return out;
}

std::string platform_of(const std::string& uv_platform) {
    // uv --python-platform values used by packse
    if (uv_platform.empty() || uv_platform == "x86_64-manylinux2014")
        return "manylinux_2_17_x86_64";
    if (uv_platform == "x86_64-unknown-linux-gnu" || uv_platform == "linux")
        return "manylinux_2_28_x86_64";
    if (uv_platform == "aarch64-manylinux2014") return "manylinux_2_17_aarch64";
    return "";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: envbox_packse SCENARIO_DIR EXPECTATIONS_FILE [-v]\n";
        return 2;
    }
    bool verbose = argc > 3 && std::string(argv[3]) == "-v";
    // Known differences: "category/name: reason" lines.
    std::map<std::string, std::string> known;
    {
        std::ifstream in(argv[2]);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty() || line[0] == '#') continue;
            auto colon = line.find(':');
            if (colon != std::string::npos) known[line.substr(0, colon)] = line.substr(colon + 1);
        }
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(argv[1]))
        if (e.path().extension() == ".toml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::map<std::string, std::array<int, 4>> per_category;  // pass, fail, known, skipped
    int unexpected = 0;
    for (const auto& file : files) {
        std::string category = file.parent_path().filename().string();
        std::string id = category + "/" + file.stem().string();
        auto& counts = per_category[category];
        toml::table doc;
        try {
            doc = toml::parse_file(file.string());
        } catch (const toml::parse_error& e) {
            std::cout << "ERROR " << id << ": " << e.description() << "\n";
            ++unexpected;
            continue;
        }
        if (doc["resolver_options"]["universal"].value_or(false)) {
            counts[3]++;
            if (verbose) std::cout << "skip  " << id << " (universal resolution)\n";
            continue;
        }
        World w;
        std::string python = doc["resolver_options"]["python"].value_or(
            doc["environment"]["python"].value_or(std::string("3.12")));
        w.python_full = python.find('.') == python.rfind('.') ? python + ".0" : python;
        std::string platform =
            platform_of(doc["resolver_options"]["python_platform"].value_or(std::string()));
        if (platform.empty()) {
            counts[3]++;
            if (verbose) std::cout << "skip  " << id << " (platform not modelled)\n";
            continue;
        }
        std::string machine = platform.substr(platform.rfind('_', platform.rfind('_') - 1) + 1);
        machine = platform.ends_with("x86_64") ? "x86_64" : "aarch64";
        w.env = pep::MarkerEnvironment::linux_cpython(w.python_full, machine);
        int major = std::stoi(python.substr(0, python.find('.')));
        int minor = std::stoi(python.substr(python.find('.') + 1));
        w.tags = pep::TargetTags::cpython(major, minor, platform).value();
        for (const auto& n : strings(doc["resolver_options"]["no_binary"]))
            w.no_binary.insert(pep::canonicalize_name(n));
        if (auto* pkgs = doc["packages"].as_table())
            for (const auto& [name, pkg] : *pkgs) {
                auto& versions = w.packages[pep::canonicalize_name(std::string(name.str()))];
                if (auto* vs = pkg.as_table()->get("versions"); vs && vs->as_table())
                    for (const auto& [vtext, vnode] : *vs->as_table()) {
                        Version v;
                        auto vt = toml::node_view<const toml::node>(vnode);
                        v.requires_dist = strings(vt["requires"]);
                        if (auto* ex = vt["extras"].as_table())
                            for (const auto& [en, ereqs] : *ex)
                                v.extras[std::string(en.str())] =
                                    strings(toml::node_view<const toml::node>(ereqs));
                        if (vt["requires_python"])
                            v.requires_python = vt["requires_python"].value<std::string>();
                        v.wheel = vt["wheel"].value_or(true);
                        v.yanked = vt["yanked"].value_or(false);
                        v.wheel_tags = strings(vt["wheel_tags"]);
                        versions[std::string(vtext.str())] = std::move(v);
                    }
            }
        std::vector<pep::Requirement> root;
        for (const auto& r : strings(doc["root"]["requires"]))
            root.push_back(pep::Requirement::parse(r).value());
        resolve::Options opt;
        opt.environment = w.env;
        if (doc["resolver_options"]["prereleases"].value_or(false))
            opt.prerelease = resolve::Prerelease::allow;
        auto result = resolve::resolve(root, w, opt);
        bool expect_ok = doc["expected"]["satisfiable"].value_or(false);
        std::string why;
        bool pass = result.ok() == expect_ok;
        if (!pass)
            why = result.ok() ? "resolved, expected no solution"
                              : "no solution: " + result.error().message();
        if (pass) {
            // The same scenario with Requires-Python learnt only from the metadata: the same
            // outcome.
            w.metadata_requires_python = true;
            auto late = resolve::resolve(root, w, opt);
            w.metadata_requires_python = false;
            std::string a, b;
            if (result.ok())
                for (const auto& p : *result)
                    a += " " + p.name + "==" + p.version.str();
            if (late.ok())
                for (const auto& p : *late)
                    b += " " + p.name + "==" + p.version.str();
            if (late.ok() != result.ok() || a != b) {
                pass = false;
                why = "with Requires-Python only in the metadata: " +
                      (late.ok() ? "got" + b : "no solution: " + late.error().message()) +
                      "; with it on the page: " + (result.ok() ? "got" + a : "no solution");
            }
        }
        if (pass && result.ok())
            if (auto* expected = doc["expected"]["packages"].as_table()) {
                std::map<std::string, std::string> want, got;
                for (const auto& [n, v] : *expected)
                    want[pep::canonicalize_name(std::string(n.str()))] = *v.value<std::string>();
                for (const auto& p : *result)
                    got[p.name] = p.version.str();
                if (want != got) {
                    pass = false;
                    std::ostringstream s;
                    s << "got";
                    for (const auto& [n, v] : got)
                        s << " " << n << "==" << v;
                    s << "; expected";
                    for (const auto& [n, v] : want)
                        s << " " << n << "==" << v;
                    why = s.str();
                }
            }
        if (pass) {
            counts[0]++;
            if (verbose)
                std::cout << "pass  " << id
                          << (result.ok() ? "" : "\n      " + result.error().message()) << "\n";
        } else if (known.count(id)) {
            counts[2]++;
            if (verbose)
                std::cout << "known " << id << ":" << known[id] << "\n      " << why << "\n";
        } else {
            counts[1]++;
            ++unexpected;
            std::cout << "FAIL  " << id << ": " << why << "\n";
        }
    }
    int total[4] = {0, 0, 0, 0};
    std::printf("%-24s %6s %6s %6s %8s\n", "category", "pass", "fail", "known", "skipped");
    for (const auto& [cat, c] : per_category) {
        std::printf("%-24s %6d %6d %6d %8d\n", cat.c_str(), c[0], c[1], c[2], c[3]);
        for (int i = 0; i < 4; ++i)
            total[i] += c[i];
    }
    std::printf("%-24s %6d %6d %6d %8d\n", "total", total[0], total[1], total[2], total[3]);
    return unexpected ? 1 : 0;
}
