// A team's environment definition read into a manifest's terms (init_from.hpp).
#include "init_from.hpp"

#include <set>

#include "envbox/lock/project_metadata.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/text.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

constexpr int kMaxDepth = 32;

// `path` (as written in `from`'s folder) relative to the manifests/ folder.
std::string relative_to(const fs::path& manifests, const fs::path& from, const std::string& path) {
    const fs::path abs = fs::weakly_canonical(from.parent_path() / path);
    const std::string rel =
        abs.lexically_relative(fs::weakly_canonical(manifests)).generic_string();
    return rel.empty() ? "." : rel;
}

// The `[project] name` of the folder `dir`, for `-e dir`.
std::string project_name(const fs::path& dir, const std::string& where) {
    const fs::path pyproject = dir / "pyproject.toml";
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(pyproject, ec)))
        throw Error(ErrorCode::invalid_input,
                    where + ": " + dir.string() + " has no pyproject.toml");
    auto meta = lock::read_project_metadata(read_input_file(pyproject), pyproject.string());
    if (!meta) throw meta.error();
    return meta->name;
}

struct Reader {
    fs::path manifests;
    Imported out;
    std::set<fs::path> seen;

    // An option line: `-r x`, `--index-url=x`, `-ex` (the option, its value).
    static std::pair<std::string, std::string> option(const std::string& line) {
        if (line.starts_with("--")) {
            const auto cut = line.find_first_of(" =\t");
            if (cut == std::string::npos) return {line, ""};
            return {line.substr(0, cut), trimmed(line.substr(cut + 1))};
        }
        return {line.substr(0, 2), trimmed(line.substr(2))};
    }

    void file(const fs::path& path, bool constraints, int depth) {
        if (depth > kMaxDepth)
            throw Error(ErrorCode::invalid_input, path.string() + ": -r files nest deeper than 32");
        const fs::path canonical = fs::weakly_canonical(path);
        if (!seen.insert(canonical).second) return;
        const std::string text = read_input_file(path);
        std::size_t number = 0;
        for (std::size_t at = 0; at <= text.size();) {
            std::size_t end = std::min(text.find('\n', at), text.size());
            std::string line = text.substr(at, end - at);
            at = end + 1;
            const std::size_t first = ++number;  // a logical line is named by its first
            while (!line.empty() && line.back() == '\\' && at <= text.size()) {  // continuation
                end = std::min(text.find('\n', at), text.size());
                line.pop_back();
                line += text.substr(at, end - at);
                at = end + 1;
                ++number;
            }
            if (const auto hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
            line = trimmed(line);
            if (line.empty() || line[0] == '#') continue;
            this->line(path, first, line, constraints, depth);
        }
    }

    void line(const fs::path& path, std::size_t number, std::string line, bool constraints,
              int depth) {
        const std::string where = path.string() + ":" + std::to_string(number);
        if (line[0] != '-') {
            std::string hashes;  // `--hash=…` after a requirement: the lock keeps its own
            if (const auto h = line.find(" --hash"); h != std::string::npos) {
                hashes = line.substr(h);
                line = trimmed(line.substr(0, h));
                out.untranslated.push_back(where +
                                           ": --hash (the lock records each file's sha256)");
            }
            auto req = pep::Requirement::parse(line);
            if (!req) throw Error(ErrorCode::invalid_input, where + ": " + req.error().message());
            (constraints ? out.constraints : out.requirements).push_back(req->str());
            return;
        }
        const auto [name, value] = option(line);
        if (name == "-r" || name == "--requirement" || name == "-c" || name == "--constraint")
            return file(path.parent_path() / value,
                        constraints || name[1] == 'c' || name == "--constraint", depth + 1);
        if (name == "-e" || name == "--editable") {
            if (value.find("://") != std::string::npos || value.starts_with("git+")) {
                out.untranslated.push_back(where + ": -e " + printable(value) +
                                           " (a URL: name it as NAME @ git+URL@REV)");
                return;
            }
            const auto bracket = value.find('[');
            const std::string folder = value.substr(0, bracket);
            const std::string project = project_name(path.parent_path() / folder, where);
            auto req = pep::Requirement::parse(
                project + (bracket == std::string::npos ? "" : value.substr(bracket)));
            if (!req) throw Error(ErrorCode::invalid_input, where + ": " + req.error().message());
            out.requirements.push_back(req->str());
            out.editables.push_back({project, relative_to(manifests, path, folder), req->str()});
            return;
        }
        if (name == "-i" || name == "--index-url") {
            out.index_url = value;
            return;
        }
        if (name == "--extra-index-url") {
            out.extra_indexes.push_back(value);
            return;
        }
        if (name == "-f" || name == "--find-links") {
            const fs::path dir = path.parent_path() / value;
            std::error_code ec;
            if (value.find("://") == std::string::npos && fs::is_directory(dir, ec))
                out.extra_indexes.push_back("file://" + fs::weakly_canonical(dir).string());
            else
                out.untranslated.push_back(where + ": " + printable(line) +
                                           " (find-links of a page: give it as an [[index]])");
            return;
        }
        out.untranslated.push_back(where + ": " + printable(line) + " (no manifest setting)");
    }
};

}  // namespace

Imported import_requirements(const fs::path& file, const fs::path& manifests) {
    Reader r{manifests, {}, {}};
    r.file(file, false, 0);
    return std::move(r.out);
}

Imported import_pyproject(const fs::path& file, const fs::path& manifests) {
    Imported out;
    const std::string text = read_input_file(file);
    auto meta = lock::read_project_metadata(text, file.string());
    if (!meta) throw meta.error();
    out.requirements.push_back(meta->name);
    out.editables.push_back({meta->name, relative_to(manifests, file, "."), meta->name});
    for (const char* tool : {"[tool.uv", "[tool.pixi", "[tool.poetry", "[tool.pdm"})
        if (text.find(tool) != std::string::npos)
            out.untranslated.push_back(file.string() + ": " + std::string(tool + 1) +
                                       "] (another tool's settings: indexes and sources go in "
                                       "the manifest's [[index]] and [sources])");
    return out;
}

Imported import_environment(const fs::path& file, const fs::path& manifests) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
        throw Error(ErrorCode::usage, "--from " + file.string() + ": no such file");
    return file.filename() == "pyproject.toml" ? import_pyproject(file, manifests)
                                               : import_requirements(file, manifests);
}

}  // namespace envbox::ops
