// The link check's findings (env/link_check.hpp): what each environment file needs that the
// loader model (env/link_check.cpp) could not give it.
#include <algorithm>

#include "env/link_linker.hpp"

namespace envbox::env {
namespace link {
namespace {

constexpr std::size_t kSymbolsPerFile = 5;  // missing symbols reported one by one, per file

bool link_version_ok(const elf::Symbol& wanted, const elf::Symbol& given) {
    if (wanted.version.empty()) return !given.hidden;
    return given.version.empty() || given.version == wanted.version;
}

std::string cuda_lines_text(const std::vector<int>& lines) {
    if (lines.empty()) return "no CUDA line envbox knows";
    std::string out = "CUDA ";
    for (std::size_t i = 0; i < lines.size(); ++i)
        out += (i ? (i + 1 == lines.size() ? " and " : ", ") : "") + std::to_string(lines[i]);
    return out;
}

}  // namespace

LinkFinding Linker::finding(int id, LinkFinding::Kind kind, std::string what,
                            std::string message) const {
    const LinkWheel& w = in_.wheels[nodes_[id].wheel];
    LinkFinding f;
    f.kind = kind;
    f.package = w.name;
    f.wheel = w.filename;
    f.file = nodes_[id].shown;
    f.what = std::move(what);
    f.message = f.file + " (" + w.filename + ") " + message;
    return f;
}

const std::unordered_set<std::string>& Linker::outer_names(int id) {
    Node& n = nodes_[id];
    if (!n.outer) {
        n.outer = std::make_unique<std::unordered_set<std::string>>();
        if (n.facts)
            for (const auto& e : n.facts->exports)
                if (auto o = outer_name(e.name); !o.empty()) n.outer->insert(std::move(o));
    }
    return *n.outer;
}

void Linker::check_cuda(int id, std::vector<LinkFinding>& out) const {
    if (!in_.cuda_major) return;
    for (const auto& name : nodes_[id].facts->needed) {
        auto lines = cuda_lines_of_library(name);
        if (!lines || std::find(lines->begin(), lines->end(), *in_.cuda_major) != lines->end())
            continue;
        const bool variant = wheel_has_line_[nodes_[id].wheel];
        out.push_back(
            finding(id, LinkFinding::Kind::cuda_line, name,
                    "links " + name + ", a library of " + cuda_lines_text(*lines) +
                        "; the environment is on CUDA " + std::to_string(*in_.cuda_major) +
                        (variant ? " (its wheel also ships a file for CUDA " +
                                       std::to_string(*in_.cuda_major) + ", picked at run time)"
                                 : "")));
        out.back().variant = variant;
    }
}

// The environment library `wanted` should have come from: the one its version reference names,
// else the library the file needs that exports other names of the symbol's C++ namespace.
int Linker::blame(int id, const elf::Symbol& wanted) {
    const Node& n = nodes_[id];
    for (std::size_t k = 0; k < n.needed.size(); ++k) {
        const int dep = n.needed[k];
        if (dep < 0 || nodes_[dep].wheel < 0) continue;
        if (!wanted.library.empty() && n.facts->needed[k] == wanted.library) return dep;
    }
    const std::string outer = outer_name(wanted.name);
    if (outer.empty() || !wanted.library.empty()) return -1;
    for (const int dep : n.needed)
        if (dep >= 0 && nodes_[dep].wheel >= 0 && outer_names(dep).count(outer)) return dep;
    return -1;
}

void Linker::check_symbols(int id, const std::vector<int>& scope_nodes,
                           std::vector<LinkFinding>& out) {
    std::unordered_set<int> scope(scope_nodes.begin(), scope_nodes.end());
    scope.insert(interpreter_scope_.begin(), interpreter_scope_.end());
    // Also every library (not an extension module) of the wheel and the wheels it depends on:
    // torch loads its libraries with RTLD_GLOBAL (libtorch_global_deps), so libtorch_nvshmem.so
    // takes c10::cuda symbols from libc10_cuda.so, which it does not name.
    const int wheel = nodes_[id].wheel;
    auto in_scope = [&](int node) {
        const Node& p = nodes_[node];
        return scope.count(node) || (p.library && p.wheel >= 0 && reach_[wheel][p.wheel]);
    };
    std::vector<std::pair<const elf::Symbol*, int>> blamed;
    std::vector<const elf::Symbol*> unresolved;
    for (const auto& u : nodes_[id].facts->undefined) {
        if (u.weak) continue;
        bool found = false;
        if (auto it = providers_.find(u.name); it != providers_.end())
            for (const auto& [node, symbol] : it->second)
                if (in_scope(node) && link_version_ok(u, *symbol)) {
                    found = true;
                    break;
                }
        if (found) continue;
        if (int lib = blame(id, u); lib >= 0)
            blamed.emplace_back(&u, lib);
        else
            unresolved.push_back(&u);
    }
    for (std::size_t k = 0; k < blamed.size() && k < kSymbolsPerFile; ++k) {
        const auto& [symbol, lib] = blamed[k];
        const std::string name = demangle(symbol->name);
        std::string more;
        if (k + 1 == kSymbolsPerFile && blamed.size() > kSymbolsPerFile)
            more = " (and " + std::to_string(blamed.size() - kSymbolsPerFile) + " more)";
        out.push_back(finding(id, LinkFinding::Kind::missing_symbol, name,
                              "needs " + name + " from " + nodes_[lib].shown + " (" +
                                  in_.wheels[nodes_[lib].wheel].filename +
                                  "), which does not export it" + more));
    }
    if (!unresolved.empty()) {
        const std::string first = demangle(unresolved.front()->name);
        out.push_back(finding(id, LinkFinding::Kind::unresolved, first,
                              "leaves " + std::to_string(unresolved.size()) +
                                  " symbol(s) that no library it loads exports, first " + first));
    }
}

void Linker::index_providers(const std::vector<int>& env_nodes) {
    std::unordered_set<std::string_view> wanted;
    for (int id : env_nodes)
        if (nodes_[id].facts)
            for (const auto& u : nodes_[id].facts->undefined)
                if (!u.weak) wanted.insert(u.name);
    for (std::size_t id = 0; id < nodes_.size(); ++id)
        if (nodes_[id].facts)
            for (const auto& e : nodes_[id].facts->exports)
                if (wanted.count(e.name)) providers_[e.name].emplace_back(static_cast<int>(id), &e);
}

std::vector<LinkFinding> Linker::run() {
    reach_wheels();
    std::vector<int> env_nodes;
    for (std::size_t w = 0; w < in_.wheels.size(); ++w)
        if (in_.wheels[w].files)
            for (const auto& f : *in_.wheels[w].files)
                if (auto path = install_path(in_.wheels[w], f.path); !path.empty())
                    env_nodes.push_back(env_node(w, f, path));
    if (!in_.interpreter.empty())
        if (int id = host_node(in_.interpreter); id >= 0) {
            bool incomplete = false;
            interpreter_scope_ = closure(id, incomplete);
        }
    std::vector<std::vector<int>> closures;
    std::vector<char> incomplete;
    for (int id : env_nodes) {
        bool missing = false;
        closures.push_back(closure(id, missing));
        incomplete.push_back(missing);
    }
    index_providers(env_nodes);
    wheel_has_line_.assign(in_.wheels.size(), 0);  // a wheel with a file for the env's line
    for (int id : env_nodes)
        if (nodes_[id].facts && in_.cuda_major)
            for (const auto& name : nodes_[id].facts->needed)
                if (auto lines = cuda_lines_of_library(name);
                    lines && std::count(lines->begin(), lines->end(), *in_.cuda_major))
                    wheel_has_line_[nodes_[id].wheel] = 1;
    std::vector<LinkFinding> out;
    for (std::size_t i = 0; i < env_nodes.size(); ++i) {
        const int id = env_nodes[i];
        const Node& n = nodes_[id];
        if (!n.facts) {
            out.push_back(finding(id, LinkFinding::Kind::unreadable, n.shown,
                                  "could not be read as an ELF file"));
            continue;
        }
        for (std::size_t k = 0; k < n.needed.size(); ++k)
            if (n.needed[k] < 0)
                out.push_back(finding(id, LinkFinding::Kind::not_found, n.facts->needed[k],
                                      "needs " + n.facts->needed[k] +
                                          ": not found in the environment or on this host"));
        check_cuda(id, out);
        if (!incomplete[i]) check_symbols(id, closures[i], out);
    }
    std::stable_sort(out.begin(), out.end(), [](const LinkFinding& a, const LinkFinding& b) {
        return std::make_pair(!a.refuses(), a.file) < std::make_pair(!b.refuses(), b.file);
    });
    return out;
}

}  // namespace link

LinkReport link_environment(const LinkInput& in) {
    link::Linker linker(in);
    LinkReport report;
    report.findings = linker.run();
    report.host_files = linker.host_files();
    return report;
}

}  // namespace envbox::env
