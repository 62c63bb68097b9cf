#include "envbox/pep/marker.hpp"

#include "envbox/pep/name.hpp"
#include "envbox/pep/specifier.hpp"
#include "envbox/pep/version.hpp"

namespace envbox::pep {
namespace {

std::string_view op_text(MarkerOp op) {
    switch (op) {
        case MarkerOp::less_equal:
            return "<=";
        case MarkerOp::less:
            return "<";
        case MarkerOp::not_equal:
            return "!=";
        case MarkerOp::equal:
            return "==";
        case MarkerOp::greater_equal:
            return ">=";
        case MarkerOp::greater:
            return ">";
        case MarkerOp::compatible:
            return "~=";
        case MarkerOp::arbitrary:
            return "===";
        case MarkerOp::in:
            return "in";
        case MarkerOp::not_in:
            return "not in";
    }
    return "?";
}

// A literal as the parser reads it back: double-quoted unless it holds a `"`, and a backslash,
// or the chosen quote inside, escaped with a backslash (the parser takes `\\`, `\'` and `\"`), so
// str() of a parsed marker parses to the same marker whatever the value holds.
std::string operand_str(const MarkerOperand& o) {
    if (o.is_variable) return o.text;
    char q = o.text.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, q);
    for (char c : o.text) {
        if (c == '\\' || c == q) out += '\\';
        out += c;
    }
    return out + q;
}

std::string comparison_str(const MarkerComparison& c) {
    return operand_str(c.lhs) + " " + std::string(op_text(c.op)) + " " + operand_str(c.rhs);
}

std::string element_str(const MarkerElement& e);

std::string group_body(const MarkerGroup& g) {
    std::string out;
    for (std::size_t k = 0; k < g.elements.size(); ++k) {
        if (k) out += g.ors[k - 1] ? " or " : " and ";
        out += element_str(g.elements[k]);
    }
    return out;
}

// A parenthesised group of one element prints as that element; larger groups keep their
// parentheses, which carry precedence.
std::string element_str(const MarkerElement& e) {
    if (const auto* c = std::get_if<MarkerComparison>(&e)) return comparison_str(*c);
    const MarkerGroup& g = *std::get<std::shared_ptr<const MarkerGroup>>(e);
    if (g.elements.size() == 1) return element_str(g.elements[0]);
    return "(" + group_body(g) + ")";
}

struct Evaluator {
    const MarkerEnvironment& env;
    MarkerContext context;

    using Value = std::variant<std::string, const std::set<std::string>*>;

    Value lookup(const MarkerOperand& o) const {
        if (!o.is_variable) return o.text;
        if (o.text == "extras" || o.text == "dependency_groups") {
            const auto& set = o.text == "extras" ? env.extras : env.dependency_groups;
            if (set) return &*set;
            if (context == MarkerContext::lock_file) {
                static const std::set<std::string> empty;
                return &empty;
            }
            throw undefined(o.text);
        }
        if (auto it = env.values.find(o.text); it != env.values.end()) {
            // Unreleased CPython builds report "3.11.1+", which is not a version; read it as
            // a local version, as packaging does.
            if (o.text == "python_full_version" && !it->second.empty() && it->second.back() == '+')
                return it->second + "local";
            return it->second;
        }
        if (o.text == "extra" && context == MarkerContext::metadata) return std::string();
        throw undefined(o.text);
    }

    static Error undefined(const std::string& name) {
        return Error(ErrorCode::invalid_input,
                     "marker variable '" + name + "' is not defined in this environment");
    }
    static Error undefined_comparison(const MarkerComparison& c) {
        return Error(ErrorCode::invalid_input,
                     "marker comparison '" + comparison_str(c) + "' is not defined");
    }

    bool compare(const MarkerComparison& c) const {
        Value lhs = lookup(c.lhs);
        Value rhs = lookup(c.rhs);
        // Set-valued variables (lock files) only answer membership of a literal.
        if (std::holds_alternative<const std::set<std::string>*>(lhs))
            throw undefined_comparison(c);
        if (const auto* set = std::get_if<const std::set<std::string>*>(&rhs)) {
            if (c.op != MarkerOp::in && c.op != MarkerOp::not_in) throw undefined_comparison(c);
            bool found = (*set)->count(canonicalize_name(std::get<std::string>(lhs))) > 0;
            return (c.op == MarkerOp::in) == found;
        }
        std::string l = std::get<std::string>(lhs);
        std::string r = std::get<std::string>(rhs);
        bool is_extra = (c.lhs.is_variable && c.lhs.text == "extra") ||
                        (c.rhs.is_variable && c.rhs.text == "extra");
        if (is_extra) {
            l = canonicalize_name(l);
            r = canonicalize_name(r);
        }
        if (c.op == MarkerOp::in) return r.find(l) != std::string::npos;
        if (c.op == MarkerOp::not_in) return r.find(l) == std::string::npos;

        bool versioned = (c.lhs.is_variable && is_version_marker_variable(c.lhs.text)) ||
                         (c.rhs.is_variable && is_version_marker_variable(c.rhs.text));
        if (versioned) {
            auto spec = Specifier::parse(std::string(op_text(c.op)) + r);
            if (spec) {
                auto cand = Candidate::from_text(l);
                if (cand.version || c.op == MarkerOp::arbitrary)
                    return spec->contains(cand, /*prereleases=*/true);
            }
        }
        switch (c.op) {
            case MarkerOp::equal:
            case MarkerOp::less_equal:
            case MarkerOp::greater_equal:
                return l == r;
            case MarkerOp::not_equal:
                return l != r;
            case MarkerOp::less:
            case MarkerOp::greater:
                return false;
            default:
                throw undefined_comparison(c);
        }
    }

    bool element(const MarkerElement& e) const {
        if (const auto* c = std::get_if<MarkerComparison>(&e)) return compare(*c);
        return group(*std::get<std::shared_ptr<const MarkerGroup>>(e));
    }

    // OR of AND-runs. Every comparison is evaluated (no short-circuit), so an undefined
    // variable is reported whatever the other operands say.
    bool group(const MarkerGroup& g) const {
        bool any = false;
        bool run = true;
        for (std::size_t k = 0; k < g.elements.size(); ++k) {
            bool v = element(g.elements[k]);
            run = run && v;
            if (k + 1 == g.elements.size() || g.ors[k]) {
                any = any || run;
                run = true;
            }
        }
        return any;
    }
};

}  // namespace

bool is_version_marker_variable(std::string_view name) {
    return name == "python_version" || name == "python_full_version" ||
           name == "implementation_version" || name == "platform_release";
}

MarkerEnvironment& MarkerEnvironment::set(std::string name, std::string value) {
    values[std::move(name)] = std::move(value);
    return *this;
}

MarkerEnvironment MarkerEnvironment::linux_cpython(std::string_view full_version,
                                                   std::string_view machine) {
    MarkerEnvironment env;
    std::string full(full_version);
    std::string short_version = full;
    if (auto dot = full.find('.'); dot != std::string::npos) {
        auto dot2 = full.find('.', dot + 1);
        short_version = full.substr(0, dot2);
    }
    env.set("os_name", "posix")
        .set("sys_platform", "linux")
        .set("platform_system", "Linux")
        .set("platform_machine", std::string(machine))
        .set("platform_python_implementation", "CPython")
        .set("implementation_name", "cpython")
        .set("implementation_version", full)
        .set("python_version", short_version)
        .set("python_full_version", full)
        .set("platform_release", "")
        .set("platform_version", "");
    return env;
}

std::string Marker::str() const {
    const MarkerGroup* g = root_.get();
    // Unwrap a root made only of one parenthesised group.
    while (g->elements.size() == 1 &&
           std::holds_alternative<std::shared_ptr<const MarkerGroup>>(g->elements[0]))
        g = std::get<std::shared_ptr<const MarkerGroup>>(g->elements[0]).get();
    return group_body(*g);
}

Result<bool> Marker::evaluate(const MarkerEnvironment& env, MarkerContext context) const {
    try {
        return Evaluator{env, context}.group(*root_);
    } catch (Error& e) {
        e.add_context("evaluating marker '" + str() + "'");
        return std::move(e);
    }
}

}  // namespace envbox::pep
