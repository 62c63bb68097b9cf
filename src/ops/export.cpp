#include "envbox/ops/export.hpp"

#include <algorithm>
#include <set>

#include "envbox/index/fetch.hpp"
#include "envbox/index/http.hpp"
#include "envbox/install/target.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/printable.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

// A value from the lock that goes into a requirements line. pip splits the file with Python's
// `str.splitlines`, which ends a line at \n, \r, \v, \f, \x1c-\x1e, NEL, U+2028 and U+2029: any
// of them would start a line pip reads as an option of its own (`--extra-index-url` of an
// attacker's choosing, `-e`), so every control, separator and invisible character is refused
// (`has_hidden`). A value ending in `\` would join the next line to its own (pip's line
// continuation), taking a package or an option with it.
const std::string& one_line(const std::string& value, const std::string& source,
                            const lock::Package& p, const char* what) {
    auto refuse = [&](const std::string& why) {
        throw Error(ErrorCode::invalid_input, source + ":" + std::to_string(p.line) + ": " +
                                                  printable(p.name) + "'s " + what + " " + why +
                                                  "; refusing to export it");
    };
    if (auto c = first_hidden(value))
        refuse("holds a line break or control character (" + *c +
               "), which would start a line of its own");
    if (value.ends_with('\\')) refuse("ends in a backslash, which would join the next line to it");
    return value;
}

// A marker as pip reads it after ` ; `: on one line, and with no `#`, since pip drops a blank
// and `#` and everything after them (the hashes on the lines the marker's line continues on).
std::string marker_text(const pep::Marker& marker, const std::string& source,
                        const lock::Package& p) {
    std::string text = one_line(marker.str(), source, p, "marker");
    if (text.find('#') != std::string::npos)
        throw Error(ErrorCode::invalid_input,
                    source + ":" + std::to_string(p.line) + ": " + p.name + "'s marker " +
                        printable(text) +
                        " holds '#', which pip reads as the start of a comment; refusing to "
                        "export it");
    return text;
}

// A URL from the lock as pip may read it: no userinfo, no blank (which would end the value),
// and no quote or backslash: pip splits an option line (`--index-url URL`) as a shell would,
// so `https://a/"b"` would be read as `https://a/b`.
std::string clean_url(const std::string& url, const std::string& source, const lock::Package& p,
                      const char* what) {
    std::string u = index::strip_userinfo(one_line(url, source, p, what));
    for (char c : u)
        if (c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '\\')
            throw Error(ErrorCode::invalid_input,
                        source + ":" + std::to_string(p.line) + ": " + p.name + "'s " + what +
                            " holds a blank, a quote or a backslash; refusing to export it");
    return u;
}

// The sha256 digests pip may accept for `p`: each file the lock lists for it.
std::vector<std::string> package_hashes(const lock::Package& p, const std::string& source) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    auto add = [&](const lock::FileRef& f) {
        auto sha = f.sha256();
        if (!sha)
            throw Error(ErrorCode::invalid_input,
                        source + ":" + std::to_string(f.line) + ": " + p.name + "'s " +
                            f.filename() +
                            " has no sha256; pip --require-hashes cannot install it");
        if (seen.insert(*sha).second) out.push_back(one_line(*sha, source, p, "sha256"));
    };
    for (const auto& w : p.wheels)
        add(w);
    if (p.sdist) add(*p.sdist);
    if (p.archive) add(*p.archive);
    return out;
}

// A local archive (`path`, relative to the lock's directory) as pip reads a path line: relative
// to `base` (the project root, where pip is to run) when it lies inside it, so the file stays
// right when the checkout moves or is copied into an image; else absolute.
std::string local_archive(const std::string& path, const std::string& source,
                          const lock::Package& p, const fs::path& base) {
    const fs::path full =
        (fs::path(source).parent_path() / one_line(path, source, p, "archive path"))
            .lexically_normal();
    std::string out = full.string();
    if (!base.empty()) {
        const fs::path rel = full.lexically_relative(base.lexically_normal());
        if (!rel.empty() && *rel.begin() != "..") out = "./" + rel.generic_string();
    }
    one_line(out, source, p, "archive path");
    for (char c : out)
        if (c == ' ' || c == '\t' || c == ';' || c == '#')
            throw Error(ErrorCode::invalid_input,
                        source + ":" + std::to_string(p.line) + ": " + p.name + "'s archive path " +
                            out +
                            " holds a blank, ';' or '#', which pip reads as the end of the path");
    return out;
}

// A `file://` index that is a flat directory of wheels (pip's --find-links), not a simple-API
// tree: it has no page for `name`, as envbox's own reader decides.
bool is_flat_directory(const std::string& url, const std::string& name) {
    if (!url.starts_with("file://")) return false;
    std::error_code ec;
    return !fs::exists(index::file_url_path(url + "/" + name + "/") / "index.html", ec);
}

// `name==version`, `name @ URL` for a direct archive, or the path of a local one.
std::string requirement_of(const lock::Package& p, const std::string& source,
                           const fs::path& base) {
    if (p.vcs || p.directory)
        throw Error(ErrorCode::invalid_input, source + ":" + std::to_string(p.line) + ": " +
                                                  p.name + " is locked as " +
                                                  (p.vcs ? "a VCS checkout" : "a local directory") +
                                                  ", which a hashed requirements file cannot pin");
    if (p.archive && p.wheels.empty() && !p.sdist) {
        if (!p.archive->url) {
            if (!p.archive->path)
                throw Error(ErrorCode::invalid_input, source + ":" + std::to_string(p.line) + ": " +
                                                          p.name +
                                                          "'s archive has neither url nor path");
            return local_archive(*p.archive->path, source, p, base);
        }
        return p.name + " @ " + clean_url(*p.archive->url, source, p, "archive URL");
    }
    if (!p.version)
        throw Error(ErrorCode::invalid_input, source + ":" + std::to_string(p.line) + ": " +
                                                  p.name + " has no version to pin");
    return p.name + "==" + one_line(p.version->str(), source, p, "version");
}

}  // namespace

std::string requirements_txt(const lock::Pylock& lock, const std::string& source,
                             const fs::path& base) {
    // The file name only: the export is committed or copied into images, and must not change
    // with the checkout's path.
    std::string head = "# Exported by envbox from " + fs::path(source).filename().string() +
                       "; install with pip install --require-hashes -r FILE\n";
    std::vector<std::string> indexes, find_links;
    std::string body;
    for (const auto& p : lock.packages) {
        if (p.index) {
            std::string url = clean_url(*p.index, source, p, "index URL");
            auto& list = is_flat_directory(url, p.name) ? find_links : indexes;
            if (std::find(list.begin(), list.end(), url) == list.end()) list.push_back(url);
        }
        one_line(p.name, source, p, "name");
        body += requirement_of(p, source, base);
        if (p.marker) body += " ; " + marker_text(*p.marker, source, p);
        for (const auto& h : package_hashes(p, source))
            body += " \\\n    --hash=sha256:" + h;
        body += "\n";
    }
    for (std::size_t i = 0; i < indexes.size(); ++i)
        head += (i == 0 ? "--index-url " : "--extra-index-url ") + indexes[i] + "\n";
    if (indexes.empty() && !find_links.empty()) head += "--no-index\n";
    for (const auto& url : find_links)
        head += "--find-links " + url + "\n";
    return head + body;
}

ExportResult export_lock(const Context& ctx, const std::string& env, ExportFormat format,
                         const std::string& target) {
    check_env_name(env);
    if (!target.empty() && format == ExportFormat::pylock)
        throw Error(ErrorCode::usage,
                    "--target " + target +
                        ": the pylock format is the one lock of every target; export "
                        "requirements-txt for one target");
    ctx.project().required();
    ExportResult r;
    const lock::LockFile lock = ctx.project().read_lock(env);
    r.lock = lock.path;
    const lock::Pylock parsed =
        target.empty() ? lock.pylock : install::lock_for_target(lock, target);
    const std::string& text = lock.text;
    r.packages = parsed.packages.size();
    r.text = format == ExportFormat::pylock
                 ? text
                 : requirements_txt(parsed, r.lock.string(), ctx.project_root);
    return r;
}

}  // namespace envbox::ops
