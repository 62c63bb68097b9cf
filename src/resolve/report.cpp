#include "resolve/report.hpp"

#include <algorithm>
#include <functional>
#include <map>

#include "envbox/index/url.hpp"

namespace envbox::resolve {
namespace {

// A set as a range of the versions that exist ("a>=1.0,<=1.4", "a==2.0", "a (one of 1.0, 1.2)").
std::string describe_set(const std::deque<Package>& packages, PackageId id, const VersionSet& s) {
    const Package& p = packages[static_cast<std::size_t>(id)];
    const auto& c = p.candidates();
    std::size_t n = s.count();
    if (c.empty()) return p.name;
    if (n == c.size()) return p.name;
    if (n == 1)
        for (std::size_t i = 0; i < c.size(); ++i)
            if (s.has(i)) return p.name + "==" + c[i].version.str();
    std::size_t lo = c.size(), hi = 0;
    for (std::size_t i = 0; i < c.size(); ++i)
        if (s.has(i)) lo = std::min(lo, i), hi = i;
    bool contiguous = n == hi - lo + 1;
    if (contiguous && n > 0) {
        if (lo == 0) return p.name + "<=" + c[hi].version.str();
        if (hi == c.size() - 1) return p.name + ">=" + c[lo].version.str();
        return p.name + ">=" + c[lo].version.str() + ",<=" + c[hi].version.str();
    }
    std::string out = p.name + " (one of ";
    std::size_t shown = 0;
    for (std::size_t i = 0; i < c.size() && shown < 6; ++i)
        if (s.has(i)) out += (shown++ ? ", " : "") + c[i].version.str();
    if (n > shown) out += ", …";
    return out + ")";
}

// "not found on any index", or on the ones asked ("not found on index other, to which
// [sources] pins it").
std::string not_found(const Package& p) {
    if (p.origin.where.empty()) return "not found on any index";
    return "not found on " + p.origin.where +
           (p.origin.pinned ? ", to which [sources] pins it" : "");
}

// "; index main has 1.1, 1.0" (or "; gamma is pinned to index other in [sources], which has
// 3.0"): what there is, newest first, so a typo or a version the index lacks is plain.
std::string what_there_is(const Package& p) {
    constexpr std::size_t kShown = 8;
    const auto& c = p.candidates();
    const std::string where = p.origin.where.empty() ? "the index" : p.origin.where;
    std::string out = p.origin.pinned
                          ? "; " + p.name + " is pinned to " + where + " in [sources], which has "
                          : "; " + where + " has ";
    for (std::size_t k = 0; k < c.size() && k < kShown; ++k)
        out += (k ? ", " : "") + c[c.size() - 1 - k].version.str();
    if (c.size() > kShown) out += " and " + std::to_string(c.size() - kShown) + " older";
    return out;
}

// Why pre-releases were not used, under `policy`, and the setting that would use them.
std::string prerelease_rule(Prerelease policy, const Package& p) {
    const std::string allow = "prerelease = \"allow\" under [environment] admits them";
    const std::string named = "a requirement names one (e.g. " + p.name +
                              ">=" + p.candidates().back().version.str() + ")";
    switch (policy) {
        case Prerelease::disallow:
            return "the manifest's prerelease = \"disallow\" excludes them (" + allow + ")";
        case Prerelease::explicit_:
            return "under prerelease = \"explicit\" a pre-release is used only when " + named +
                   " (" + allow + ")";
        case Prerelease::if_necessary:
            return "under prerelease = \"if-necessary\" pre-releases are used only for a "
                   "package that has no release (" +
                   allow + ")";
        case Prerelease::allow:
        case Prerelease::if_necessary_or_explicit:
            break;
    }
    return "pre-releases are used only when " + named + " or the manifest allows them (" + allow +
           ")";
}

std::string describe_no_versions(const std::deque<Package>& packages, const Incompat& inc,
                                 Prerelease policy) {
    const Term& t = inc.terms[0];
    const Package& p = packages[static_cast<std::size_t>(t.pkg)];
    if (p.candidates().empty()) return p.name + " was " + not_found(p);
    bool only_pre = true;
    for (std::size_t i = 0; i < p.candidates().size(); ++i)
        if (t.set.has(i) && !p.candidates()[i].version.is_prerelease()) only_pre = false;
    if (only_pre && !t.set.empty())
        return "only pre-releases of " + describe_set(packages, t.pkg, t.set) + " exist, and " +
               prerelease_rule(policy, p);
    if (t.set.empty()) return "no version of " + p.name + " matches" + what_there_is(p);
    return "no usable version of " + describe_set(packages, t.pkg, t.set) + " exists";
}

std::string describe_dependency(const std::deque<Package>& packages, const Incompat& inc) {
    const Term& from = inc.terms[0];
    const Package& tp = packages[static_cast<std::size_t>(inc.dep)];
    std::string target = inc.text;
    if (tp.candidates().empty())
        target += " (" + not_found(tp) + ")";
    else if (inc.terms.size() == 1 && tp.direct)
        target += " (" + tp.base + " is " + tp.candidates().front().version.str() +
                  ", from the direct reference " + index::redact_url(tp.direct->url) + ")";
    else if (inc.terms.size() == 1)
        target += " (no version of " + tp.name + " matches" + what_there_is(tp) + ")";
    if (from.pkg == kRoot) return "you require " + target;
    return describe_set(packages, from.pkg, from.set) + " depends on " + target;
}

// A derived incompatibility, by the shape of its terms.
std::string describe_derived(const std::deque<Package>& packages, const Incompat& inc) {
    auto set_of = [&](const Term* t) { return describe_set(packages, t->pkg, t->set); };
    std::vector<const Term*> pos, neg;
    for (const auto& t : inc.terms)
        (t.positive ? pos : neg).push_back(&t);
    bool root = std::any_of(inc.terms.begin(), inc.terms.end(),
                            [](const Term& t) { return t.pkg == kRoot; });
    if (inc.terms.empty() || (root && inc.terms.size() == 1))
        return "the requirements are unsatisfiable";
    if (root && pos.size() == 1 && neg.size() == 1) return "you require " + set_of(neg[0]);
    if (root && pos.size() == 2) {
        const Term* other = pos[0]->pkg == kRoot ? pos[1] : pos[0];
        return "the requirements rule out " + set_of(other);
    }
    if (pos.size() == 1 && neg.empty()) return set_of(pos[0]) + " cannot be used";
    if (pos.size() == 1 && neg.size() == 1) return set_of(pos[0]) + " depends on " + set_of(neg[0]);
    std::string out;
    if (neg.empty()) {
        for (std::size_t i = 0; i < pos.size(); ++i)
            out += (i == 0 ? "" : i + 1 == pos.size() ? " and " : ", ") + set_of(pos[i]);
        return out + " are incompatible";
    }
    for (std::size_t i = 0; i < inc.terms.size(); ++i)
        out += (i ? " and " : "") + describe_term(packages, inc.terms[i]);
    return out + " are incompatible";
}

std::string describe(const std::deque<Package>& packages, const Incompat& inc, Prerelease policy) {
    switch (inc.kind) {
        case Kind::root:
            return "the requirements must be satisfied";
        case Kind::no_versions:
            return describe_no_versions(packages, inc, policy);
        case Kind::unavailable:
            return describe_set(packages, inc.terms[0].pkg, inc.terms[0].set) + " " + inc.text;
        case Kind::dependency:
            return describe_dependency(packages, inc);
        case Kind::derived:
            break;
    }
    return describe_derived(packages, inc);
}

}  // namespace

std::string describe_term(const std::deque<Package>& packages, const Term& t) {
    if (t.pkg == kRoot) return "the requirements";
    return t.positive ? describe_set(packages, t.pkg, t.set)
                      : "not " + describe_set(packages, t.pkg, t.set);
}

std::string explain(const std::deque<Package>& packages, const std::vector<Incompat>& incompats,
                    int terminal_id, Prerelease policy) {
    auto at = [&](int id) -> const Incompat& { return incompats[static_cast<std::size_t>(id)]; };
    // Post-order over the derivation graph; a derived incompatibility used twice gets a
    // number so later lines can refer to it.
    std::map<int, int> uses;
    std::function<void(int)> count = [&](int id) {
        if (uses[id]++ > 0) return;
        if (at(id).kind == Kind::derived) {
            count(at(id).cause1);
            count(at(id).cause2);
        }
    };
    count(terminal_id);
    std::map<int, int> numbered;
    std::vector<std::string> lines;
    std::function<std::string(int)> visit = [&](int id) -> std::string {
        const Incompat& inc = at(id);
        if (inc.kind != Kind::derived) return describe(packages, inc, policy);
        if (auto it = numbered.find(id); it != numbered.end())
            return describe(packages, inc, policy) + " (" + std::to_string(it->second) + ")";
        std::string a = visit(inc.cause1);
        std::string b = visit(inc.cause2);
        std::string conclusion = id == terminal_id ? "the requirements are unsatisfiable"
                                                   : describe(packages, inc, policy);
        std::string line = "Because " + a + " and " + b + ", " + conclusion + ".";
        if (uses[id] > 1) {
            int n = static_cast<int>(numbered.size()) + 1;
            numbered[id] = n;
            line += " (" + std::to_string(n) + ")";
        }
        lines.push_back(line);
        return conclusion;
    };
    std::string last = visit(terminal_id);
    if (lines.empty()) lines.push_back("Because " + last + ", the requirements are unsatisfiable.");
    std::string out = "no solution:";
    for (const auto& l : lines)
        out += "\n  " + l;
    return out;
}

}  // namespace envbox::resolve
