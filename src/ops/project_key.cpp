// Where a project's environments live: by its identity, so they follow a moved or cloned-again
// checkout (contracts in include/envbox/ops/context.hpp).
#include <fcntl.h>
#include <unistd.h>

#include <random>

#include "envbox/ops/context.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

constexpr const char* kIdentityFile = ".envbox-project";
constexpr const char* kIdentityHeader = "envbox-project 1";
constexpr std::size_t kMaxIdentityBytes = 4096;

struct Identity {
    std::string id, name;
};

bool is_hex32(const std::string& s) {
    return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// An identity's name as a key's readable part (hostile: at most 64 bytes), as a path's is.
std::string key_name(std::string name) {
    if (name.size() > 64) name.resize(64);
    return key_part(name);
}

// The file `name` of the folder `dir`, never through a link, at most `limit` bytes; none when
// either is missing (or not what it should be).
std::optional<std::string> read_plain(const fs::path& dir, const char* name, std::size_t limit) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return std::nullopt;
    try {
        return read_own_file(fd.get(), dir / name, limit);
    } catch (const Error&) {  // a link, a FIFO, a file too large: no identity
        return std::nullopt;
    }
}

// The project's identity, read from its manifests/ folder (committed, so hostile until
// checked): the header, a 32-hex id and a name; none when anything else is there.
std::optional<Identity> read_identity(const fs::path& root) {
    const auto text = read_plain(root / "manifests", kIdentityFile, kMaxIdentityBytes);
    if (!text) return std::nullopt;
    Identity out;
    std::size_t at = 0;
    bool header = false;
    while (at < text->size()) {
        std::size_t end = text->find('\n', at);
        if (end == std::string::npos) end = text->size();
        const std::string line = text->substr(at, end - at);
        at = end + 1;
        if (!header) {
            if (line != kIdentityHeader) return std::nullopt;
            header = true;
        } else if (line.starts_with("id ")) {
            out.id = line.substr(3);
        } else if (line.starts_with("name ")) {
            out.name = line.substr(5);
        }
    }
    if (!is_hex32(out.id)) return std::nullopt;
    return out;
}

// The project root recorded in `envs/<key>/project` (written by create), never through a link
// (a planted one is refused, as every command refuses it).
std::string recorded_root(const fs::path& home, const std::string& key) {
    const fs::path dir = store::Home(home).envs() / key;
    const UniqueFd fd = open_own_dir_at_path(home, dir);
    auto text = fd ? read_own_file(fd.get(), dir / "project", 4096) : std::nullopt;
    if (!text) return {};
    while (!text->empty() && text->back() == '\n')
        text->pop_back();
    return *text;
}

}  // namespace

ProjectKey project_key_of(const fs::path& home, const fs::path& root) {
    const std::string by_path = path_key(root);
    const auto identity = read_identity(root);
    if (!identity) return {by_path, ""};
    std::error_code ec;
    const fs::path envs = store::Home(home).envs();
    // Environments made by this path before: they stay (a venv names its own folder).
    if (fs::is_directory(fs::symlink_status(envs / by_path, ec))) return {by_path, ""};
    const std::string by_id =
        key_name(identity->name.empty() ? root.filename().string() : identity->name) + "-" +
        to_hex(sha256("project " + identity->id)).substr(0, 12);
    const std::string owner = recorded_root(home, by_id);
    if (owner.empty() || owner == root.string()) return {by_id, ""};
    const auto other = read_identity(owner);
    if (!other || other->id != identity->id) {  // moved (or the old checkout is gone)
        // This checkout is theirs now: a clone made later gets its own.
        if (UniqueFd dir = open_own_dir(envs, by_id))
            replace_own_file(dir.get(), envs / by_id / "project", root.string() + "\n");
        return {by_id, "the environments of " + owner +
                           " follow this checkout (the same project, moved or cloned again)"};
    }
    return {by_path, "another checkout of this project, " + owner +
                         ", has its environments; this one gets its own (built from the "
                         "same store)"};
}

std::string project_key(const Context& ctx) {
    return project_key_of(ctx.home, ctx.project_root).key;
}

bool ensure_project_identity(const fs::path& root) {
    const fs::path manifests = root / "manifests";
    std::error_code ec;
    if (fs::symlink_status(manifests / kIdentityFile, ec).type() != fs::file_type::not_found)
        return false;  // there already (or something is: never replaced)
    std::random_device random;
    std::string id;
    static const char* const hex = "0123456789abcdef";
    for (int i = 0; i < 32; ++i)
        id += hex[random() & 15u];
    write_file_atomic(manifests / kIdentityFile,
                      std::string(kIdentityHeader) + "\nid " + id + "\nname " +
                          key_name(root.filename().string()) + "\n",
                      0644, Durability::none);
    return true;
}

}  // namespace envbox::ops
