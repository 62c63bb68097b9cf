#pragma once
/// PEP 508 environment markers (spec "Dependency specifiers", PEP 685, PEP 751 extensions).
/// Markers are evaluated against a target `MarkerEnvironment`, never against the host.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "envbox/util/error.hpp"

namespace envbox::pep {

/// The marker variables of one target. String variables absent from `values` are undefined
/// (evaluating a marker that needs one is an error); `extras` and `dependency_groups` exist
/// only in lock-file context (PEP 751).
struct MarkerEnvironment {
    /// Variable name (`python_version`, `sys_platform`, …, `extra`) → value.
    std::map<std::string, std::string, std::less<>> values;
    std::optional<std::set<std::string>> extras;             ///< normalised names
    std::optional<std::set<std::string>> dependency_groups;  ///< normalised names

    /// Sets one string variable; returns *this.
    MarkerEnvironment& set(std::string name, std::string value);

    /// The environment of CPython `python_full_version` (e.g. "3.12.8") on Linux `machine`
    /// (e.g. "x86_64"), as an interpreter there would report it.
    static MarkerEnvironment linux_cpython(std::string_view python_full_version,
                                           std::string_view machine);
};

/// Where a marker is evaluated; decides the defaults of `extra`, `extras`, `dependency_groups`.
enum class MarkerContext {
    metadata,     ///< Requires-Dist of core metadata: `extra` defaults to ""
    lock_file,    ///< pylock.toml: `extras` and `dependency_groups` default to empty sets
    requirement,  ///< a plain requirement: no defaults
};

/// Marker operators.
enum class MarkerOp {
    less_equal,
    less,
    not_equal,
    equal,
    greater_equal,
    greater,
    compatible,
    arbitrary,
    in,
    not_in
};

/// One side of a comparison: a variable (canonical name) or a literal string.
struct MarkerOperand {
    bool is_variable = false;
    std::string text;
};

/// `lhs op rhs`.
struct MarkerComparison {
    MarkerOperand lhs;
    MarkerOp op;
    MarkerOperand rhs;
};

struct MarkerGroup;
/// An element of a group: a comparison or a parenthesised group.
using MarkerElement = std::variant<MarkerComparison, std::shared_ptr<const MarkerGroup>>;

/// A flat sequence `e0 op0 e1 op1 e2 …` as written; `and` binds tighter than `or` when
/// evaluated. `ors[k]` is true when the operator between element k and k+1 is `or`.
struct MarkerGroup {
    std::vector<MarkerElement> elements;
    std::vector<bool> ors;
};

/// A parsed marker expression.
class Marker {
  public:
    /// Parses a whole marker expression (trailing spaces/tabs allowed, newlines not).
    static Result<Marker> parse(std::string_view text);
    /// Wraps an already-parsed group.
    explicit Marker(std::shared_ptr<const MarkerGroup> root) : root_(std::move(root)) {}

    /// Canonical text: canonical variable names, double-quoted literals (single-quoted when the
    /// value holds a `"`), `extra` values normalised, redundant parentheses removed.
    std::string str() const;

    /// Evaluates against `env` in `context`. Errors: a variable `env` lacks and the context does
    /// not default ("undefined environment name"), or a comparison the variable's type does not
    /// define (`os_name ~= "x"`, `extras == "a"`).
    Result<bool> evaluate(const MarkerEnvironment& env,
                          MarkerContext context = MarkerContext::metadata) const;

    const MarkerGroup& root() const { return *root_; }
    bool operator==(const Marker& other) const { return str() == other.str(); }

  private:
    std::shared_ptr<const MarkerGroup> root_;
};

/// True for the marker variables whose values are PEP 440 versions when they parse.
bool is_version_marker_variable(std::string_view name);

}  // namespace envbox::pep
