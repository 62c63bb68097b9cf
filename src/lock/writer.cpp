#include "envbox/lock/writer.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace envbox::lock {

std::string toml_string(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

namespace {

// `dependencies = [...]`, one inline table a line (a changed edge is a one-line diff), sorted;
// `version` only where `names` counts the name more than once.
std::string dependencies_line(std::vector<LockedDependency> deps,
                              const std::map<std::string, int>& names) {
    std::sort(deps.begin(), deps.end(), [](const LockedDependency& a, const LockedDependency& b) {
        return a.name != b.name ? a.name < b.name : a.version < b.version;
    });
    std::string out = "dependencies = [";
    const LockedDependency* previous = nullptr;
    for (const LockedDependency& d : deps) {
        auto count = names.find(d.name);
        const bool ambiguous = count != names.end() && count->second > 1 && !d.version.empty();
        if (previous && previous->name == d.name && (!ambiguous || previous->version == d.version))
            continue;
        out += "\n    { name = " + toml_string(d.name);
        if (ambiguous) out += ", version = " + toml_string(d.version);
        out += " },";
        previous = &d;
    }
    return out + (deps.empty() ? "]\n" : "\n]\n");
}

// A wheel's or an sdist's table: `header`, then its name, URL, upload time, size and sha256.
std::string file_table(const char* header, const LockedWheel& f) {
    std::string out = header;
    out += "name = " + toml_string(f.filename) + "\n";
    out += "url = " + toml_string(f.url) + "\n";
    if (f.upload_time) out += "upload-time = " + *f.upload_time + "\n";
    if (f.size) out += "size = " + std::to_string(*f.size) + "\n";
    return out + "hashes = { sha256 = " + toml_string(f.sha256) + " }\n";
}

// The PEP 751 table of a package that is not an index's: `[packages.vcs]`,
// `[packages.directory]` or `[packages.archive]`; none for an index package.
std::optional<std::string> source_table(const LockedPackage& p) {
    std::string out;
    if (const auto& v = p.vcs) {
        out += "\n[packages.vcs]\ntype = \"git\"\nurl = " + toml_string(v->url) + "\n";
        if (v->requested_revision)
            out += "requested-revision = " + toml_string(*v->requested_revision) + "\n";
        out += "commit-id = " + toml_string(v->commit) + "\n";
        if (v->subdirectory) out += "subdirectory = " + toml_string(*v->subdirectory) + "\n";
        return out;
    }
    if (const auto& d = p.directory) {
        out += "\n[packages.directory]\npath = " + toml_string(d->path) + "\n";
        if (d->editable) out += "editable = true\n";
        return out;
    }
    if (const auto& a = p.archive) {
        out += "\n[packages.archive]\n";
        if (a->url) out += "url = " + toml_string(*a->url) + "\n";
        if (a->path) out += "path = " + toml_string(*a->path) + "\n";
        out += "size = " + std::to_string(a->size) + "\n";
        out += "hashes = { sha256 = " + toml_string(a->sha256) + " }\n";
        return out;
    }
    return std::nullopt;
}

}  // namespace

std::string write_pylock(const LockDocument& doc) {
    std::string out;
    out += "# This file is written by envbox (`envbox lock`). Do not edit it by hand: change the\n";
    out += "# manifest beside it and lock again. It is a PEP 751 lock, readable by pip and uv.\n";
    out += "lock-version = \"1.0\"\n";
    if (!doc.environments.empty()) {
        out += "environments = [";
        for (std::size_t i = 0; i < doc.environments.size(); ++i)
            out += (i ? ", " : "") + toml_string(doc.environments[i]);
        out += "]\n";
    }
    if (doc.requires_python) out += "requires-python = " + toml_string(*doc.requires_python) + "\n";
    out += "created-by = \"envbox\"\n";
    std::vector<const LockedPackage*> sorted;
    for (const auto& p : doc.packages)
        sorted.push_back(&p);
    std::sort(sorted.begin(), sorted.end(), [](const LockedPackage* a, const LockedPackage* b) {
        if (a->name != b->name) return a->name < b->name;
        if (a->version != b->version) return a->version < b->version;
        return a->marker < b->marker;
    });
    // `packages` is required (PEP 751): a lock of nothing says so at the top level, where an
    // array of tables cannot.
    if (sorted.empty()) out += "packages = []\n";
    std::map<std::string, int> names;  // how many entries hold each name
    for (const LockedPackage* p : sorted)
        ++names[p->name];
    for (const LockedPackage* p : sorted) {
        out += "\n[[packages]]\n";
        out += "name = " + toml_string(p->name) + "\n";
        if (!p->version.empty()) out += "version = " + toml_string(p->version) + "\n";
        if (p->marker) out += "marker = " + toml_string(*p->marker) + "\n";
        if (!p->archive && !p->directory && !p->vcs)
            out += "index = " + toml_string(p->index) + "\n";
        if (p->dependencies) out += dependencies_line(*p->dependencies, names);
        if (auto table = source_table(*p)) {  // a direct reference, a folder or a commit
            out += *table;
            continue;
        }
        if (p->sdist) out += file_table("\n[packages.sdist]\n", *p->sdist);
        std::vector<const LockedWheel*> wheels;
        for (const auto& w : p->wheels)
            wheels.push_back(&w);
        std::sort(wheels.begin(), wheels.end(), [](const LockedWheel* a, const LockedWheel* b) {
            return a->filename != b->filename ? a->filename < b->filename : a->url < b->url;
        });
        for (const LockedWheel* w : wheels)
            out += file_table("\n[[packages.wheels]]\n", *w);
    }
    if (!doc.tool.empty() || !doc.tool_lists.empty()) {
        out += "\n[tool.envbox]\n";
        std::map<std::string, std::string> lines;
        for (const auto& [k, v] : doc.tool)
            lines[k] = toml_string(v);
        for (const auto& [k, vs] : doc.tool_lists) {
            std::string arr = "[";
            for (std::size_t i = 0; i < vs.size(); ++i)
                arr += (i ? ", " : "") + toml_string(vs[i]);
            lines[k] = arr + "]";
        }
        for (const auto& [k, v] : lines)
            out += k + " = " + v + "\n";
    }
    return out;
}

}  // namespace envbox::lock
