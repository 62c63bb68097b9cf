#pragma once
// The link check's loader model, private to env/link_check.cpp (the search) and
// env/link_findings.cpp (the findings).
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "envbox/env/link_check.hpp"

// The loader model: one Node per file (the environment's and the host's it reaches), each
// DT_NEEDED resolved once; `run` checks every environment file against it.

namespace envbox::env::link {

// `path` with "." and ".." folded; nullopt when it climbs above its start.
std::optional<std::string> fold(const std::string& path);

// The outermost name of a mangled C++ symbol (`_ZN3c1010TensorImpl…` → "c10"; vtables and type
// information of such a type too); empty for anything else.
std::string outer_name(std::string_view s);

// `path` with each `$ORIGIN` or `${ORIGIN}` (followed by '/' or the end) replaced by `origin`.
std::string with_origin(const std::string& path, const std::string& origin);

struct Node {
    const elf::Facts* facts = nullptr;  // nullptr: did not read
    std::string shown;                  // env-relative path, or the host path
    std::string dir;                    // its folder, for $ORIGIN (host: absolute)
    int wheel = -1;                     // -1: a host file
    bool library = false;               // `lib*.so*`: not an extension module
    std::vector<int> needed;            // resolved DT_NEEDED, -1 for one not found
    bool resolved = false;
    std::unique_ptr<std::unordered_set<std::string>> outer;  // outer names it exports, lazily
};

class Linker {
  public:
    explicit Linker(const LinkInput& in) : in_(in) {}
    std::vector<LinkFinding> run();
    std::vector<std::string> host_files() const {
        std::vector<std::string> out;
        for (const auto& [path, id] : host_paths_)
            out.push_back(path);
        return out;
    }

  private:
    int env_node(std::size_t wheel, const store::ElfFile& f, const std::string& path);
    int host_node(const std::filesystem::path& path);
    std::string install_path(const LinkWheel& w, const std::string& member) const;
    int find_in(const std::string& dir, bool env_dir, const std::string& name,
                const elf::Facts* asker);
    int resolve_one(int node, const std::string& name);
    void resolve(int node);
    std::vector<int> closure(int node, bool& incomplete);
    void reach_wheels();
    const std::unordered_set<std::string>& outer_names(int node);
    void index_providers(const std::vector<int>& env_nodes);
    void check_cuda(int node, std::vector<LinkFinding>& out) const;
    int blame(int node, const elf::Symbol& wanted);
    void check_symbols(int node, const std::vector<int>& scope, std::vector<LinkFinding>& out);
    LinkFinding finding(int node, LinkFinding::Kind kind, std::string what,
                        std::string message) const;

    const LinkInput& in_;
    std::vector<Node> nodes_;
    std::map<std::string, int> env_paths_, host_paths_;
    std::multimap<std::string, int> by_soname_;
    std::vector<std::unique_ptr<elf::Facts>> host_facts_;
    std::vector<std::vector<char>> reach_;  // reach_[w][v]: wheel w depends on v (or is it)
    std::vector<int> interpreter_scope_;
    std::vector<char> wheel_has_line_;  // per wheel: a file needing the env's CUDA line
    // Every symbol name some file leaves undefined → the nodes exporting it, with the symbol.
    std::unordered_map<std::string_view, std::vector<std::pair<int, const elf::Symbol*>>>
        providers_;
};

}  // namespace envbox::env::link
