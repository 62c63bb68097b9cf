#pragma once
// "Did you mean …?": the valid word nearest to a mistyped one (manifest keys, commands,
// options, environment and index names).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace envbox {

/// Optimal string alignment distance: an insertion, deletion, substitution or swap of
/// neighbours costs 1.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The element of `candidates` nearest to `word` ignoring case, when it is at most a third of
/// `word`'s length away (at least 1); the first of equally near ones.
std::optional<std::string> closest_spelling(std::string_view word,
                                            const std::vector<std::string_view>& candidates);

}  // namespace envbox
