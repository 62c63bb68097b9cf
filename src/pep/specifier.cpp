#include "envbox/pep/specifier.hpp"

#include <algorithm>
#include <array>

#include "envbox/pep/name.hpp"
#include "pep/text.hpp"

namespace envbox::pep {
namespace {

constexpr std::array<std::pair<std::string_view, Operator>, 8> kOperators{{
    {"===", Operator::arbitrary},
    {"~=", Operator::compatible},
    {"==", Operator::equal},
    {"!=", Operator::not_equal},
    {"<=", Operator::less_equal},
    {">=", Operator::greater_equal},
    {"<", Operator::less},
    {">", Operator::greater},
}};

Error bad_specifier(std::string_view text, std::string_view why) {
    return Error(ErrorCode::invalid_input,
                 "invalid specifier '" + std::string(text) + "': " + std::string(why));
}

// True when `v`'s release starts with the first `len` segments of `prefix`'s release
// (zero-padding `v`), epochs equal. Pre-release, post and dev parts of `v` are ignored:
// `==2.*` matches `2a1` and `2.post1`.
bool prefix_match(const Version& v, const Version& prefix, std::size_t len) {
    if (v.epoch() != prefix.epoch()) return false;
    const auto& r = v.release();
    const auto& p = prefix.release();
    for (std::size_t k = 0; k < len; ++k)
        if ((k < r.size() ? r[k] : 0) != p[k]) return false;
    return true;
}

bool prefix_match(const Version& v, const Version& prefix) {
    return prefix_match(v, prefix, prefix.release().size());
}

// The pre-release policy of `contains`: a pre-release is refused only when pre-releases are
// disallowed explicitly (the call's setting, else the configured one) and it is not installed.
bool refused_prerelease(bool is_prerelease, std::optional<bool> call,
                        std::optional<bool> configured, bool installed) {
    std::optional<bool> allow = call ? call : configured;
    return is_prerelease && allow == false && !installed;
}

bool equal_public(const Version& v, const Version& spec) {
    // Without a local label in the clause, the candidate's label is ignored.
    if (!spec.has_local()) return v.compare_public(spec) == 0;
    return v == spec;
}

}  // namespace

std::string_view operator_str(Operator op) {
    for (const auto& [text, o] : kOperators)
        if (o == op) return text;
    return "?";
}

Candidate Candidate::from_text(std::string_view text) {
    return Candidate{std::string(text), Version::try_parse(text)};
}

Candidate Candidate::from_version(const Version& v) {
    return Candidate{v.str(), v};
}

Result<Specifier> Specifier::parse(std::string_view input, std::optional<bool> prereleases) {
    std::string_view s = strip_ascii_space(input);
    Specifier spec;
    spec.configured_ = prereleases;
    bool found = false;
    for (const auto& [text, op] : kOperators) {
        if (s.substr(0, text.size()) == text) {
            spec.op_ = op;
            s.remove_prefix(text.size());
            found = true;
            break;
        }
    }
    if (!found) return bad_specifier(input, "expected an operator (~=, ==, !=, <=, >=, <, >, ===)");
    s = strip_ascii_space(s);
    spec.text_ = std::string(s);

    if (spec.op_ == Operator::arbitrary) {
        for (char c : s)
            if (is_ascii_space(c) || c == ';' || c == ')')
                return bad_specifier(input, "=== takes one word");
        spec.version_ = Version::try_parse(s);
        return spec;
    }
    if (s.empty()) return bad_specifier(input, "missing version");
    // The specifier grammar is PEP 440's without surrounding whitespace.
    if (is_ascii_space(s.front()) || is_ascii_space(s.back()))
        return bad_specifier(input, "unexpected whitespace");

    std::string_view body = s;
    if (body.size() >= 2 && body.substr(body.size() - 2) == ".*") {
        if (spec.op_ != Operator::equal && spec.op_ != Operator::not_equal)
            return bad_specifier(input, ".* suffix can only be used with `==` or `!=` operators");
        spec.wildcard_ = true;
        body.remove_suffix(2);
    }
    auto v = Version::try_parse(body);
    if (!v || strip_ascii_space(body).size() != body.size())
        return bad_specifier(input, "not a PEP 440 version");
    if (spec.wildcard_ && (v->pre() || v->post() || v->dev() || v->has_local()))
        return bad_specifier(
            input,
            ".* suffix cannot be used with pre-release, post-release, dev or local versions");
    if (v->has_local() && spec.op_ != Operator::equal && spec.op_ != Operator::not_equal)
        return bad_specifier(input, "local version label can only be used with `==` or `!=`");
    if (spec.op_ == Operator::compatible && v->release().size() < 2)
        return bad_specifier(input, "~= needs at least two release segments");
    spec.version_ = std::move(*v);
    return spec;
}

bool Specifier::implies_prereleases() const {
    if (op_ == Operator::not_equal || wildcard_ || !version_) return false;
    return version_->is_prerelease();
}

std::optional<bool> Specifier::prereleases() const {
    if (configured_) return configured_;
    if (implies_prereleases()) return true;
    return std::nullopt;
}

bool Specifier::matches(const Version& v) const {
    if (!version_) return false;  // non-PEP 440 `===` operand: only string equality can match
    const Version& spec = *version_;
    switch (op_) {
        case Operator::equal:
            return wildcard_ ? prefix_match(v, spec) : equal_public(v, spec);
        case Operator::not_equal:
            return wildcard_ ? !prefix_match(v, spec) : !equal_public(v, spec);
        case Operator::less_equal:
            return v.compare_public(spec) <= 0;
        case Operator::greater_equal:
            return v.compare_public(spec) >= 0;
        case Operator::less: {
            if (!(v < spec)) return false;
            // `<V` must not admit pre-releases of V itself unless V is one.
            // Those are the pre-releases at or above V.dev0 (`<1.0.post1` still admits `1.0a1`).
            if (!spec.is_prerelease() && v.is_prerelease()) {
                Version lowest(spec.release(), spec.epoch(), std::nullopt, spec.post(), 0);
                if (v >= lowest) return false;
            }
            return true;
        }
        case Operator::greater: {
            if (!(v > spec)) return false;
            // `>V` must not admit post-releases of V unless V is one, nor local versions of V.
            if (!spec.is_postrelease() && v.is_postrelease() &&
                v.without(false, true, true, true) == spec)
                return false;
            if (v.has_local() && v.compare_public(spec) == 0) return false;
            return true;
        }
        case Operator::compatible: {
            // ~=X.Y.Z  ≡  >=X.Y.Z, ==X.Y.*
            return v.compare_public(spec) >= 0 && prefix_match(v, spec, spec.release().size() - 1);
        }
        case Operator::arbitrary:
            return ascii_lower(v.str()) == ascii_lower(text_);
    }
    return false;
}

bool Specifier::matches(const Candidate& c) const {
    if (op_ == Operator::arbitrary) return ascii_lower(c.text) == ascii_lower(text_);
    return c.version && matches(*c.version);
}

bool Specifier::contains(const Candidate& c, std::optional<bool> prereleases,
                         bool installed) const {
    if (refused_prerelease(c.version && c.version->is_prerelease(), prereleases, configured_,
                           installed))
        return false;
    return matches(c);
}

bool Specifier::contains(const Version& v, std::optional<bool> prereleases, bool installed) const {
    if (refused_prerelease(v.is_prerelease(), prereleases, configured_, installed)) return false;
    return matches(v);
}

std::string Specifier::str() const {
    return std::string(operator_str(op_)) + text_;
}

std::pair<Operator, std::string> Specifier::canonical_key() const {
    if (op_ == Operator::arbitrary || wildcard_) return {op_, text_};
    return {op_, canonicalize_version(text_, op_ != Operator::compatible)};
}

bool Specifier::operator==(const Specifier& other) const {
    return canonical_key() == other.canonical_key();
}

// ---- SpecifierSet -----------------------------------------------------------------------

void SpecifierSet::add(Specifier s) {
    for (const auto& existing : specs_)
        if (existing == s) return;
    specs_.push_back(std::move(s));
}

Result<SpecifierSet> SpecifierSet::parse(std::string_view text, std::optional<bool> prereleases) {
    SpecifierSet set;
    set.configured_ = prereleases;
    // Each clause is compared with those kept: real sets have a handful (`>=3.8,!=3.9.*,<4`),
    // a hostile Requires-Python of a hundred thousand would cost billions of comparisons.
    constexpr std::size_t kMaxClauses = 256;
    if (std::count(text.begin(), text.end(), ',') >= static_cast<std::ptrdiff_t>(kMaxClauses))
        return Error(ErrorCode::invalid_input, "specifier set '" + quoted_for_error(text) +
                                                   "' has more than " +
                                                   std::to_string(kMaxClauses) + " clauses");
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t comma = text.find(',', start);
        if (comma == std::string_view::npos) comma = text.size();
        std::string_view clause = strip_ascii_space(text.substr(start, comma - start));
        if (!clause.empty()) {
            auto spec = Specifier::parse(clause);
            if (!spec) return spec.error();
            set.add(std::move(*spec));
        }
        start = comma + 1;
    }
    return set;
}

std::optional<bool> SpecifierSet::prereleases() const {
    if (configured_) return configured_;
    for (const auto& s : specs_)
        if (s.prereleases() == true) return true;
    return std::nullopt;
}

bool SpecifierSet::contains(const Candidate& c, std::optional<bool> prereleases,
                            bool installed) const {
    if (refused_prerelease(c.version && c.version->is_prerelease(), prereleases, configured_,
                           installed))
        return false;
    for (const auto& s : specs_)
        if (!s.matches(c)) return false;
    return true;
}

bool SpecifierSet::contains(const Version& v, std::optional<bool> prereleases,
                            bool installed) const {
    if (refused_prerelease(v.is_prerelease(), prereleases, configured_, installed)) return false;
    for (const auto& s : specs_)
        if (!s.matches(v)) return false;
    return true;
}

std::vector<std::size_t> SpecifierSet::filter_indices(const std::vector<Candidate>& candidates,
                                                      std::optional<bool> prereleases) const {
    std::optional<bool> allow = prereleases ? prereleases : this->prereleases();
    // Matching candidates by class; unparsable strings (matched only by `===` or the empty
    // set) are kept in any case but do not count as final releases.
    enum Class : char { final_release, pre_release, unparsable };
    std::vector<std::pair<std::size_t, Class>> matched;
    bool any_final = false;
    for (std::size_t k = 0; k < candidates.size(); ++k) {
        const Candidate& c = candidates[k];
        bool ok = true;
        for (const auto& s : specs_)
            if (!s.matches(c)) {
                ok = false;
                break;
            }
        if (!ok) continue;
        Class cls = !c.version                   ? unparsable
                    : c.version->is_prerelease() ? pre_release
                                                 : final_release;
        any_final = any_final || cls == final_release;
        matched.emplace_back(k, cls);
    }
    const bool keep_pre = allow == true || (!allow.has_value() && !any_final);
    std::vector<std::size_t> out;
    for (const auto& [k, cls] : matched)
        if (cls != pre_release || keep_pre) out.push_back(k);
    return out;
}

std::vector<Candidate> SpecifierSet::filter(const std::vector<Candidate>& candidates,
                                            std::optional<bool> prereleases) const {
    std::vector<Candidate> out;
    for (std::size_t k : filter_indices(candidates, prereleases))
        out.push_back(candidates[k]);
    return out;
}

Result<SpecifierSet> SpecifierSet::intersect(const SpecifierSet& other) const {
    SpecifierSet out = *this;
    if (configured_ && other.configured_ && *configured_ != *other.configured_)
        return Error(ErrorCode::invalid_input,
                     "cannot combine specifier sets with opposite pre-release settings");
    if (!out.configured_) out.configured_ = other.configured_;
    for (const auto& s : other.specs_)
        out.add(s);
    return out;
}

namespace {

// Versions at and around `v`'s boundary. Membership of a version in a clause changes only at the
// clause's version (and, through the pre/post/local exclusions of `<` and `>`, just around
// it), so a finite set of such points decides satisfiability and set relations exactly.
void add_probes_around(const Version& v, std::vector<Version>& out) {
    const auto& r = v.release();
    std::vector<std::vector<std::uint64_t>> releases = {r};
    for (std::size_t len = 1; len <= r.size(); ++len) {
        std::vector<std::uint64_t> prefix(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(len));
        releases.push_back(prefix);
        prefix.back() += 1;
        releases.push_back(prefix);
        if (prefix.back() >= 2) {
            prefix.back() -= 2;
            releases.push_back(prefix);
        }
    }
    auto longer = r;
    longer.push_back(1);
    releases.push_back(longer);
    longer.back() = 0;
    longer.push_back(1);
    releases.push_back(longer);

    using Pre = Version::Pre;
    const std::uint64_t pn = v.pre() ? v.pre()->number : 0;
    const std::uint64_t po = v.post().value_or(0);
    const std::uint64_t dv = v.dev().value_or(0);
    std::vector<std::optional<Pre>> pres = {std::nullopt, Pre{PreKind::a, 0}, Pre{PreKind::b, 0},
                                            Pre{PreKind::rc, 0}};
    if (v.pre()) {
        pres.push_back(Pre{v.pre()->kind, pn});
        pres.push_back(Pre{v.pre()->kind, pn + 1});
        if (pn > 0) pres.push_back(Pre{v.pre()->kind, pn - 1});
    }
    std::vector<std::optional<std::uint64_t>> posts = {std::nullopt, 0, po, po + 1};
    if (po > 0) posts.push_back(po - 1);
    std::vector<std::optional<std::uint64_t>> devs = {std::nullopt, 0, dv, dv + 1};
    if (dv > 0) devs.push_back(dv - 1);
    LocalSegment label{"zzz", 0, false};
    for (const auto& rel : releases)
        for (const auto& pre : pres)
            for (const auto& post : posts)
                for (const auto& dev : devs) {
                    out.emplace_back(rel, v.epoch(), pre, post, dev);
                    out.emplace_back(rel, v.epoch(), pre, post, dev, std::vector{label});
                }
    if (v.has_local()) out.push_back(v);
}

std::vector<Candidate> probes_for(std::initializer_list<const SpecifierSet*> sets) {
    std::vector<Version> versions = {Version({0}), Version({0}, 0, std::nullopt, std::nullopt, 0)};
    std::vector<Candidate> out;
    for (const SpecifierSet* set : sets)
        for (const auto& spec : set->specifiers()) {
            if (spec.version()) add_probes_around(*spec.version(), versions);
            // `===` also matches the literal string, parsable or not.
            if (spec.op() == Operator::arbitrary)
                out.push_back(Candidate::from_text(spec.version_text()));
        }
    std::sort(versions.begin(), versions.end(),
              [](const Version& a, const Version& b) { return a.str() < b.str(); });
    versions.erase(
        std::unique(versions.begin(), versions.end(),
                    [](const Version& a, const Version& b) { return a.str() == b.str(); }),
        versions.end());
    for (const auto& v : versions)
        out.push_back(Candidate::from_version(v));
    return out;
}

}  // namespace

bool SpecifierSet::is_satisfiable() const {
    if (specs_.empty()) return true;
    for (const auto& c : probes_for({this}))
        if (contains(c,
                     configured_ == false ? std::optional<bool>(false) : std::optional<bool>(true)))
            return true;
    return false;
}

bool SpecifierSet::is_subset(const SpecifierSet& other) const {
    for (const auto& c : probes_for({this, &other}))
        if (contains(c, true) && !other.contains(c, true)) return false;
    return true;
}

bool SpecifierSet::is_disjoint(const SpecifierSet& other) const {
    for (const auto& c : probes_for({this, &other}))
        if (contains(c, true) && other.contains(c, true)) return false;
    return true;
}

std::string SpecifierSet::str() const {
    std::vector<std::string> parts;
    for (const auto& s : specs_)
        parts.push_back(s.str());
    std::sort(parts.begin(), parts.end());
    std::string out;
    for (const auto& p : parts) {
        if (!out.empty()) out += ',';
        out += p;
    }
    return out;
}

bool SpecifierSet::operator==(const SpecifierSet& other) const {
    if (specs_.size() != other.specs_.size()) return false;
    for (const auto& s : specs_)
        if (std::find(other.specs_.begin(), other.specs_.end(), s) == other.specs_.end())
            return false;
    return true;
}

}  // namespace envbox::pep
