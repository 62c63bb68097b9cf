#include "envbox/ops/export.hpp"

#include <algorithm>
#include <set>

#include "envbox/env/generation.hpp"
#include "envbox/index/fetch.hpp"
#include "envbox/index/http.hpp"
#include "envbox/install/target.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/sha256.hpp"

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

// The sha256 digests pip may accept for `p`: each file the lock lists for it, and `built` (a
// wheel built from its sdist) when not empty.
std::vector<std::string> package_hashes(const lock::Package& p, const std::string& source,
                                        const std::string& built) {
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
    if (!built.empty() && seen.insert(built).second) out.push_back(built);
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

// `name==version`, `name @ URL` for a direct archive, or the path of a local one. A folder or a
// git commit is pinned only as the wheel envbox built from it (`built_here`, --wheels).
std::string requirement_of(const lock::Package& p, const std::string& source, const fs::path& base,
                           bool built_here) {
    const bool editable = p.directory && p.directory->editable;
    if ((p.vcs || p.directory) && (!built_here || editable))
        throw Error(ErrorCode::invalid_input,
                    source + ":" + std::to_string(p.line) + ": " + p.name + " is locked as " +
                        (p.vcs      ? "a git commit"
                         : editable ? "an editable folder (your checkout)"
                                    : "a local folder") +
                        ", which a hashed requirements file cannot pin" +
                        (editable ? "; `envbox pack` or `push` ships it as a wheel of its commit"
                                  : "; --wheels DIR writes the wheel envbox built from it and "
                                    "pins that"));
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
                             const fs::path& base, const BuiltWheelLinks& built) {
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
        body += requirement_of(p, source, base, built.hashes.count(p.name) > 0);
        if (p.marker) body += " ; " + marker_text(*p.marker, source, p);
        const auto it = built.hashes.find(p.name);
        for (const auto& h : package_hashes(p, source, it == built.hashes.end() ? "" : it->second))
            body += " \\\n    --hash=sha256:" + h;
        body += "\n";
    }
    for (std::size_t i = 0; i < indexes.size(); ++i)
        head += (i == 0 ? "--index-url " : "--extra-index-url ") + indexes[i] + "\n";
    if (indexes.empty() && !find_links.empty()) head += "--no-index\n";
    for (const auto& url : find_links)
        head += "--find-links " + url + "\n";
    if (!built.find_links.empty()) head += "--find-links " + built.find_links + "\n";
    return head + body;
}

namespace {

// Copies the wheels ENV's current generation installs that were built from `lock`'s sdists
// into `dir`, each checked against its sha256; their links for the requirements file.
BuiltWheelLinks write_built_wheels(const Context& ctx, const std::string& env,
                                   const lock::Pylock& lock, const fs::path& dir,
                                   std::size_t& written) {
    std::map<std::string, const lock::Package*> from_sdist;
    std::set<std::string> locked;
    for (const auto& p : lock.packages) {
        // Built here: from its sdist, or from a folder or a git commit (never an editable link).
        if (p.sdist || p.vcs || (p.directory && !p.directory->editable)) from_sdist[p.name] = &p;
        for (const auto& w : p.wheels)
            if (auto sha = w.sha256()) locked.insert(*sha);
    }
    BuiltWheelLinks out;
    if (from_sdist.empty()) return out;
    const auto gen = env::current_generation(env_dir(ctx, env));
    if (!gen)
        throw Error(ErrorCode::invalid_input, env + " has no generation whose built wheels to " +
                                                  "write (run `envbox create " + env + "` first)");
    const store::Store store(ctx.home);
    fs::create_directories(dir);
    for (const auto& pkg : gen->packages) {
        auto it = from_sdist.find(pep::canonicalize_name(pkg.name));
        if (it == from_sdist.end() || locked.count(pkg.wheel_sha256) || !it->second->version ||
            it->second->version->str() != pkg.version)
            continue;
        auto name = pep::WheelFilename::parse(pkg.filename);
        if (!name || pkg.filename.find('/') != std::string::npos)
            throw Error(ErrorCode::integrity,
                        env + "'s generation names '" + printable(pkg.filename) + "' as a wheel");
        const fs::path dest = dir / pkg.filename, tmp = dir / ("." + pkg.filename + ".tmp");
        ScopedRemove remove(tmp);
        std::error_code ec;
        fs::remove(tmp, ec);
        const auto kept = store.kept_archive(pkg.wheel_sha256);
        if (!kept) ec = std::make_error_code(std::errc::no_such_file_or_directory);
        if (kept) fs::copy_file(*kept, tmp, ec);
        if (ec || to_hex(sha256_file(tmp)) != pkg.wheel_sha256)
            throw Error(ErrorCode::integrity, "the store's archive of " + pkg.filename +
                                                  " (built from " + pkg.name + "'s source) is " +
                                                  (ec ? "missing: " + ec.message() : "damaged") +
                                                  "; run `envbox create " + env + " --force`");
        fs::rename(tmp, dest);
        remove.release();
        out.hashes[it->first] = pkg.wheel_sha256;
        written++;
    }
    if (out.hashes.size() != from_sdist.size())
        throw Error(ErrorCode::invalid_input,
                    env +
                        "'s current generation is not of its lock (a package built from its "
                        "source is missing or of another version): run `envbox create " +
                        env + "` first");
    return out;
}

}  // namespace

ExportResult export_lock(const Context& ctx, const std::string& env, ExportFormat format,
                         const std::string& target, const fs::path& wheels_dir) {
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
    if (!wheels_dir.empty() && format == ExportFormat::pylock)
        throw Error(ErrorCode::usage, "--wheels: only a requirements file points pip at them");
    BuiltWheelLinks built;
    if (!wheels_dir.empty()) {
        const std::string shown = wheels_dir.string();
        if (first_hidden(shown) || shown.find_first_of(" \t#\\\"'") != std::string::npos)
            throw Error(ErrorCode::usage, "--wheels " + printable(shown) +
                                              ": a blank, control character, quote, '#' or "
                                              "backslash would break the requirements file's line");
        built = write_built_wheels(ctx, env, parsed, wheels_dir, r.built_wheels);
        built.find_links = shown;
    }
    r.text = format == ExportFormat::pylock
                 ? text
                 : requirements_txt(parsed, r.lock.string(), ctx.project_root, built);
    return r;
}

}  // namespace envbox::ops
