// The link check (env/link_check.hpp): the loader's search, on paper, over the environment's
// files (from the store's ELF facts) and the host's libraries (read where they lie).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "env/link_linker.hpp"
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::env::link {

// `path` with "." and ".." folded; nullopt when it climbs above its start.
std::optional<std::string> fold(const std::string& path) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t slash = path.find('/', start);
        if (slash == std::string::npos) slash = path.size();
        const std::string part = path.substr(start, slash - start);
        if (part == "..") {
            if (parts.empty()) return std::nullopt;
            parts.pop_back();
        } else if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
        start = slash + 1;
    }
    std::string out;
    for (const auto& p : parts)
        out += (out.empty() ? "" : "/") + p;
    return out;
}

// The outermost name of a mangled C++ symbol (`_ZN3c1010TensorImpl…` → "c10"; vtables and type
// information of such a type too); empty for anything else.
std::string outer_name(std::string_view s) {
    if (s.starts_with("_ZT") && s.size() > 3)
        s.remove_prefix(4);  // _ZTV/_ZTI/_ZTS: a type
    else if (s.starts_with("_Z"))
        s.remove_prefix(2);
    else
        return {};
    if (!s.starts_with("N")) return {};
    s.remove_prefix(1);
    while (!s.empty() && (s[0] == 'K' || s[0] == 'V' || s[0] == 'r'))
        s.remove_prefix(1);
    std::size_t n = 0, i = 0;
    while (i < s.size() && i < 4 && s[i] >= '0' && s[i] <= '9')
        n = n * 10 + (s[i++] - '0');
    if (i == 0 || n == 0 || n > s.size() - i) return {};
    return std::string(s.substr(i, n));
}

std::string Linker::install_path(const LinkWheel& w, const std::string& member) const {
    const std::string stem =
        w.dist_info.substr(0, w.dist_info.size() - std::string(".dist-info").size());
    const std::string data = stem + ".data/";
    if (!member.starts_with(data))
        return (w.root_is_purelib ? in_.purelib : in_.platlib) + "/" + member;
    const std::string rest = member.substr(data.size());
    const std::size_t slash = rest.find('/');
    if (slash == std::string::npos) return {};
    const std::string scheme = rest.substr(0, slash), tail = rest.substr(slash + 1);
    const std::string* root = scheme == "purelib"   ? &in_.purelib
                              : scheme == "platlib" ? &in_.platlib
                              : scheme == "scripts" ? &in_.scripts
                              : scheme == "data"    ? &in_.data
                                                    : nullptr;
    if (!root) return {};
    return root->empty() ? tail : *root + "/" + tail;
}

int Linker::env_node(std::size_t wheel, const store::ElfFile& f, const std::string& path) {
    Node n;
    n.facts = f.unreadable.empty() ? &f.facts : nullptr;
    n.shown = path;
    n.dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
    n.wheel = static_cast<int>(wheel);
    n.library = path.substr(path.rfind('/') + 1).starts_with("lib");
    nodes_.push_back(std::move(n));
    const int id = static_cast<int>(nodes_.size() - 1);
    env_paths_[path] = id;
    const std::string name =
        f.facts.soname.empty() ? path.substr(path.rfind('/') + 1) : f.facts.soname;
    by_soname_.emplace(name, id);
    return id;
}

int Linker::host_node(const fs::path& path) {
    std::error_code ec;
    const fs::path real = fs::canonical(path, ec);
    if (ec) return -1;
    if (auto it = host_paths_.find(real.string()); it != host_paths_.end()) return it->second;
    Node n;
    n.shown = path.string();
    n.dir = path.parent_path().string();
    UniqueFd fd(::open(real.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    char head[4] = {};
    if (fd && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 64 &&
        ::pread(fd.get(), head, 4, 0) == 4 && elf::is_elf(std::string_view(head, 4))) {
        void* map = ::mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
        if (map != MAP_FAILED) {
            try {
                host_facts_.push_back(std::make_unique<elf::Facts>(elf::read_facts(
                    std::string_view(static_cast<const char*>(map), st.st_size), real.string())));
                n.facts = host_facts_.back().get();
            } catch (const Error&) {
            }
            ::munmap(map, st.st_size);
        }
    }
    nodes_.push_back(std::move(n));
    const int id = static_cast<int>(nodes_.size() - 1);
    host_paths_[real.string()] = id;
    return id;
}

int Linker::find_in(const std::string& dir, bool env_dir, const std::string& name,
                    const elf::Facts* asker) {
    int found = -1;
    if (env_dir) {
        auto it = env_paths_.find(dir.empty() ? name : dir + "/" + name);
        found = it == env_paths_.end() ? -1 : it->second;
    } else {
        for (const char* pseudo : {"/proc", "/sys", "/dev"})
            if (dir == pseudo || dir.starts_with(std::string(pseudo) + "/")) return -1;
        std::error_code ec;
        const fs::path p = fs::path(dir) / name;
        if (fs::is_regular_file(p, ec)) found = host_node(p);
    }
    // The loader passes over a file of another class or machine and searches on (a 32-bit
    // libc of a multiarch host).
    if (found >= 0 && asker && nodes_[found].facts &&
        (nodes_[found].facts->elf_class != asker->elf_class ||
         nodes_[found].facts->machine != asker->machine))
        return -1;
    return found;
}

// `path` with each `$ORIGIN` or `${ORIGIN}` (followed by '/' or the end) replaced by `origin`.
std::string with_origin(const std::string& path, const std::string& origin) {
    std::string out;
    for (std::size_t i = 0; i < path.size();) {
        std::size_t len = 0;
        for (std::string_view token : {"${ORIGIN}", "$ORIGIN"})
            if (std::string_view(path).substr(i).starts_with(token) &&
                (i + token.size() == path.size() || path[i + token.size()] == '/'))
                len = token.size();
        if (len) {
            out += origin;
            i += len;
        } else {
            out += path[i++];
        }
    }
    return out;
}

int Linker::resolve_one(int id, const std::string& name) {
    // Copies: a host library found below adds a node, and `nodes_` may move.
    const elf::Facts* facts = nodes_[id].facts;
    const int wheel = nodes_[id].wheel;
    const std::string dir = nodes_[id].dir;
    if (name.find('/') != std::string::npos)
        return name[0] == '/'
                   ? find_in(fs::path(name).parent_path(), false, fs::path(name).filename(), facts)
                   : -1;
    std::vector<std::string> dirs =
        facts->runpath.empty() ? facts->rpath : std::vector<std::string>{};
    dirs.insert(dirs.end(), facts->runpath.begin(), facts->runpath.end());
    for (const std::string& entry : dirs) {
        const std::string d = with_origin(entry, wheel >= 0 ? "\x01" + dir : dir);
        int found = -1;
        if (d.starts_with("\x01")) {  // inside the environment
            if (auto folded = fold(d.substr(1))) found = find_in(*folded, true, name, facts);
        } else if (d.starts_with("/")) {
            found = find_in(d, false, name, facts);
        }
        if (found >= 0) return found;
    }
    if (wheel >= 0) {  // a library an import of its wheel or a dependency loaded first
        auto [lo, hi] = by_soname_.equal_range(name);
        for (auto it = lo; it != hi; ++it)
            if (reach_[wheel][nodes_[it->second].wheel]) return it->second;
    }
    for (const auto& d : in_.system_dirs)
        if (int found = find_in(d.string(), false, name, facts); found >= 0) return found;
    return -1;
}

void Linker::resolve(int id) {
    if (nodes_[id].resolved) return;
    nodes_[id].resolved = true;
    if (!nodes_[id].facts) return;
    std::vector<int> out;
    for (const auto& name : nodes_[id].facts->needed)
        out.push_back(resolve_one(id, name));
    nodes_[id].needed = std::move(out);
}

std::vector<int> Linker::closure(int start, bool& incomplete) {
    std::vector<int> out;
    std::unordered_set<int> seen{start};
    std::deque<int> todo{start};
    while (!todo.empty()) {
        const int id = todo.front();
        todo.pop_front();
        out.push_back(id);
        resolve(id);
        for (int dep : nodes_[id].needed) {
            if (dep < 0)
                incomplete = true;
            else if (seen.insert(dep).second)
                todo.push_back(dep);
        }
    }
    return out;
}

void Linker::reach_wheels() {
    const std::size_t n = in_.wheels.size();
    reach_.assign(n, std::vector<char>(n, 0));
    for (std::size_t w = 0; w < n; ++w) {
        std::vector<std::size_t> todo{w};
        reach_[w][w] = 1;
        while (!todo.empty()) {
            const std::size_t v = todo.back();
            todo.pop_back();
            const auto& deps = in_.wheels[v].dependencies;
            if (!deps) {  // no dependencies recorded: every wheel may have loaded first
                std::fill(reach_[w].begin(), reach_[w].end(), 1);
                break;
            }
            for (std::size_t d : *deps)
                if (d < n && !reach_[w][d]) {
                    reach_[w][d] = 1;
                    todo.push_back(d);
                }
        }
    }
}

}  // namespace envbox::env::link
