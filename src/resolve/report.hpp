#pragma once
// The explanation of a failed resolution (uv keeps it in `pubgrub/report.rs`), private to the
// resolver: the derivation graph of the terminal incompatibility written as "Because … and …,
// …" lines, in terms of the user's requirements and the versions that exist.

#include <deque>
#include <string>
#include <vector>

#include "resolve/solver.hpp"

namespace envbox::resolve {

/// One term as the explanation prints it ("not b>=2.0", "the requirements").
std::string describe_term(const std::deque<Package>& packages, const Term& t);

/// "no solution:" and one line per derivation step leading to `terminal_id`; an incompatibility
/// used twice is numbered so later lines can refer to it. Where only pre-releases would do,
/// the line says what `policy` admits and the setting that admits them.
std::string explain(const std::deque<Package>& packages, const std::vector<Incompat>& incompats,
                    int terminal_id, Prerelease policy);

}  // namespace envbox::resolve
