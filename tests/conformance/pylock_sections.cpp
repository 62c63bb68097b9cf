// Conformance rows for the lock layer: PEP 751 file names, versions, documents (valid and
// invalid), artifact file names, hash validation and install-time selection; and every lock file
// under pylock/.

#include <filesystem>
#include <sstream>

#include "conformance/suite.hpp"
#include "envbox/lock/pylock.hpp"

namespace conformance {
namespace {

using namespace envbox;

// A JSON value as a TOML inline value (strings, integers, booleans, arrays, tables).
std::string toml_inline(const json& j) {
    if (j.is_object()) {
        std::string out = "{ ";
        bool first = true;
        for (const auto& [k, v] : j.items()) {
            if (!first) out += ", ";
            first = false;
            out += json(k).dump() + " = " + toml_inline(v);
        }
        return out + " }";
    }
    if (j.is_array()) {
        std::string out = "[";
        for (std::size_t k = 0; k < j.size(); ++k)
            out += (k ? ", " : "") + toml_inline(j[k]);
        return out + "]";
    }
    return j.dump();
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

pep::MarkerEnvironment environment_of(const json& j) {
    pep::MarkerEnvironment env;
    for (const auto& [k, v] : j.items())
        env.set(k, v.get<std::string>());
    return env;
}

// The target the reference used its host for, where a row left it out.
const pep::MarkerEnvironment& default_environment() {
    static const auto env = pep::MarkerEnvironment::linux_cpython("3.12.12", "x86_64");
    return env;
}

json selection_json(const lock::Selection& s) {
    static const char* kinds[] = {"PackageWheel", "PackageSdist", "PackageArchive",
                                  "PackageDirectory", "PackageVcs"};
    const lock::Package& p = *s.package;
    json out = {{"package", p.name},
                {"version", p.version ? json(p.version->str()) : json(nullptr)},
                {"dist_type", kinds[static_cast<int>(s.kind)]},
                {"dist_name", nullptr},
                {"dist_path", nullptr},
                {"dist_url", nullptr}};
    auto opt = [](const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); };
    if (s.file) {
        out["dist_name"] = opt(s.file->name);
        out["dist_path"] = opt(s.file->path);
        out["dist_url"] = opt(s.file->url);
    } else if (s.kind == lock::Selection::Kind::directory) {
        out["dist_path"] = p.directory->path;
    } else if (s.kind == lock::Selection::Kind::vcs) {
        out["dist_path"] = opt(p.vcs->path);
        out["dist_url"] = opt(p.vcs->url);
    }
    return out;
}

}  // namespace

void pylock_sections(Suite& s) {
    json d = s.load("pylock.json");
    s.rows(d, "file_names", [](const json& r, std::string&) {
        return lock::is_lock_file_name(r["file_name"].get<std::string>()) == r["valid"].get<bool>();
    });
    s.rows(d, "lock_versions", [](const json& r, std::string& why) {
        std::string doc = "lock-version = \"" + r["lock_version"].get<std::string>() +
                          "\"\ncreated-by = \"t\"\npackages = []\n";
        auto lock = lock::Pylock::parse(doc, "pylock.toml");
        if (!lock) why = lock.error().message();
        return lock.ok() == r["supported"].get<bool>();
    });
    s.rows(d, "from_dict", [](const json& r, std::string& why) {
        auto lock = lock::Pylock::parse(r["toml"].get<std::string>(), "pylock.toml",
                                        lock::DigestCheck::spec);
        if (r["valid"].get<bool>()) {
            if (!lock) why = lock.error().message();
            return lock.ok();
        }
        if (lock) return why = "accepted", false;
        why = lock.error().message();
        // The message names the key at fault, as the reference's does.
        const std::string want = r["error"].get<std::string>();
        auto in = want.rfind(" in '");
        return in == std::string::npos || why.find(want.substr(in)) != std::string::npos;
    });
    s.rows(d, "dist_filename", [](const json& r, std::string& why) {
        lock::FileRef f;
        const json& e = r["entry"];
        if (e.contains("name")) f.name = e["name"].get<std::string>();
        if (e.contains("path")) f.path = e["path"].get<std::string>();
        if (e.contains("url")) f.url = e["url"].get<std::string>();
        why = "got " + f.filename();
        return f.filename() == r["expected_filename"].get<std::string>();
    });
    s.rows(d, "hash_validation", [](const json& r, std::string& why) {
        std::string doc =
            "lock-version = \"1.0\"\ncreated-by = \"t\"\n[[packages]]\nname = \"example\"\n"
            "wheels = [" +
            toml_inline(r["wheel"]) + "]\n";
        auto lock = lock::Pylock::parse(doc, "pylock.toml");
        if (lock) return why = "accepted", false;
        return true;
    });
    s.rows(d, "select", [](const json& r, std::string& why) {
        auto lock = lock::Pylock::parse(r["lock_toml"].get<std::string>(), "pylock.toml",
                                        lock::DigestCheck::spec);
        if (!lock) return why = lock.error().message(), false;
        const json& a = r["args"];
        lock::SelectTarget target;
        target.environment =
            a.contains("environment") ? environment_of(a["environment"]) : default_environment();
        std::optional<pep::TargetTags> tags;
        if (a.contains("tags")) {
            std::vector<pep::Tag> list;
            for (const auto& t : a["tags"])
                list.push_back((*pep::parse_tag(t.get<std::string>()))[0]);
            tags.emplace(std::move(list));
        } else {
            tags = *pep::TargetTags::cpython(3, 12, "manylinux_2_28_x86_64");
        }
        target.tags = &*tags;
        auto names = [](const json& j) -> std::optional<std::set<std::string>> {
            if (j.is_null()) return std::nullopt;
            return j.get<std::set<std::string>>();
        };
        if (a.contains("extras")) target.extras = names(a["extras"]);
        if (a.contains("dependency_groups"))
            target.dependency_groups = names(a["dependency_groups"]);
        if (a.contains("prefer_sdist_predicate")) {
            bool v = a["prefer_sdist_predicate"]["returns"].get<bool>();
            target.prefer_sdist = [v](const lock::Package&) { return v; };
        }
        auto got = lock::select(*lock, target);
        if (r.contains("error")) {
            if (got) why = "selected " + std::to_string(got->size()) + " packages";
            return !got.ok();
        }
        if (!got) return why = got.error().describe(), false;
        json list = json::array();
        for (const auto& sel : *got)
            list.push_back(selection_json(sel));
        why = "got " + list.dump();
        return list == r["expected"];
    });

    // Every lock file shipped with the corpus: valid ones parse, the invalid one does not.
    s.file = "pylock/";
    s.section = "files";
    s.index = 0;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(s.dir + "/pylock"))
        if (e.path().extension() == ".toml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        auto lock = lock::Pylock::parse(read_text(f.string()), f.filename().string());
        const bool expect_valid = f.filename() != "pylock.invalid.toml";
        s.record(lock.ok() == expect_valid, json(f.filename().string()),
                 lock.ok() ? "accepted" : lock.error().message());
        ++s.index;
    }
}

}  // namespace conformance
