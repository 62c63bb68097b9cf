#pragma once
/// PEP 440 version specifiers (`>=2.4,<3`, `==2.11.*`, `~=1.4.2`, `===foobar`). Pure, no I/O.
///
/// Pre-release policy follows the spec's SHOULD and pypa/packaging 26: `contains` rejects a
/// pre-release only when pre-releases are explicitly disallowed (at construction or call time);
/// `filter` keeps pre-releases only when they are allowed, or when no final release in the
/// candidates matches. A specifier whose version is a pre-release (`>=1.0.dev1`) allows them.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/version.hpp"
#include "envbox/util/error.hpp"

namespace envbox::pep {

/// A specifier operator.
enum class Operator {
    compatible,
    equal,
    not_equal,
    less_equal,
    greater_equal,
    less,
    greater,
    arbitrary
};

/// The operator's spelling (`~=`, `==`, …).
std::string_view operator_str(Operator op);

/// A candidate to test: a parsed version, or a raw string that may not be PEP 440 (only `===`
/// and the empty set can match such strings).
struct Candidate {
    std::string text;                ///< as given (used by `===`)
    std::optional<Version> version;  ///< parsed form, if any
    /// Builds a candidate from text, parsing it.
    static Candidate from_text(std::string_view text);
    /// Builds a candidate from a parsed version; `===` compares against its canonical string.
    static Candidate from_version(const Version& v);
};

/// One clause, such as `>=2.4`.
class Specifier {
  public:
    /// Parses one clause; whitespace around and between operator and version is allowed.
    static Result<Specifier> parse(std::string_view text,
                                   std::optional<bool> prereleases = std::nullopt);

    Operator op() const { return op_; }
    /// The version as written (`2.1.*`, `lolwat` for `===`).
    const std::string& version_text() const { return text_; }
    /// The parsed version (without `.*`); absent only for a non-PEP 440 `===` operand.
    const std::optional<Version>& version() const { return version_; }
    bool is_wildcard() const { return wildcard_; }

    /// True when the clause names a pre-release with an operator that admits it.
    bool implies_prereleases() const;
    /// The pre-release setting: configured at construction, else true when implied, else unset.
    std::optional<bool> prereleases() const;

    /// Operator semantics only (no pre-release policy).
    bool matches(const Version& v) const;
    /// Operator semantics for a candidate that may be unparsable.
    bool matches(const Candidate& c) const;
    /// Membership with the pre-release policy (see file comment). `installed` admits a
    /// pre-release regardless of the policy.
    bool contains(const Candidate& c, std::optional<bool> prereleases = std::nullopt,
                  bool installed = false) const;
    bool contains(const Version& v, std::optional<bool> prereleases = std::nullopt,
                  bool installed = false) const;

    /// Canonical text: operator immediately followed by the version as written.
    std::string str() const;
    /// Equality of meaning: operator and canonicalised version (`==2.8.0` equals `==2.8`).
    bool operator==(const Specifier& other) const;

  private:
    Operator op_ = Operator::equal;
    std::string text_;
    std::optional<Version> version_;
    bool wildcard_ = false;
    std::optional<bool> configured_;
    std::pair<Operator, std::string> canonical_key() const;
    friend class SpecifierSet;
};

/// A comma-separated AND of clauses; the empty set matches every candidate.
class SpecifierSet {
  public:
    SpecifierSet() = default;
    /// Parses `>=2.4, <3,` (empty clauses are ignored, so a trailing comma is fine).
    static Result<SpecifierSet> parse(std::string_view text,
                                      std::optional<bool> prereleases = std::nullopt);

    const std::vector<Specifier>& specifiers() const { return specs_; }
    bool empty() const { return specs_.empty(); }
    /// Number of distinct clauses.
    std::size_t size() const { return specs_.size(); }

    /// Configured setting, else true when any clause implies pre-releases, else unset.
    std::optional<bool> prereleases() const;

    bool contains(const Candidate& c, std::optional<bool> prereleases = std::nullopt,
                  bool installed = false) const;
    bool contains(const Version& v, std::optional<bool> prereleases = std::nullopt,
                  bool installed = false) const;

    /// The candidates this set admits, in input order, with the pre-release policy applied to
    /// the whole list (pre-releases only when allowed or when no final release matches).
    std::vector<Candidate> filter(const std::vector<Candidate>& candidates,
                                  std::optional<bool> prereleases = std::nullopt) const;
    /// Indices form of `filter` for callers holding their own candidate list.
    std::vector<std::size_t> filter_indices(const std::vector<Candidate>& candidates,
                                            std::optional<bool> prereleases = std::nullopt) const;

    /// True when some version (or, for `===`, some string) satisfies every clause, under the
    /// configured pre-release setting (false: final releases only).
    bool is_satisfiable() const;
    /// Every version in this set is in `other` (pre-releases included).
    bool is_subset(const SpecifierSet& other) const;
    bool is_superset(const SpecifierSet& other) const { return other.is_subset(*this); }
    /// No version is in both sets.
    bool is_disjoint(const SpecifierSet& other) const;

    /// Intersection; fails when the two sets configure opposite pre-release settings.
    Result<SpecifierSet> intersect(const SpecifierSet& other) const;

    /// Clauses sorted by their text and joined with `,` (`<3,>=2.4`).
    std::string str() const;
    /// Equal when they hold the same clauses (by meaning), in any order.
    bool operator==(const SpecifierSet& other) const;

  private:
    std::vector<Specifier> specs_;
    std::optional<bool> configured_;
    void add(Specifier s);
};

}  // namespace envbox::pep
