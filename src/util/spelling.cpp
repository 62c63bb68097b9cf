#include "envbox/util/spelling.hpp"

#include <algorithm>
#include <cctype>

namespace envbox {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

std::optional<std::string> closest_spelling(std::string_view word,
                                            const std::vector<std::string_view>& candidates) {
    // Mistyped words are short; a long one (a pasted blob) is not worth a quadratic table.
    if (word.size() > 200) return std::nullopt;
    auto lower = [](std::string_view s) {
        std::string out(s);
        for (auto& c : out)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return out;
    };
    const std::string w = lower(word);
    std::optional<std::string> best;
    std::size_t best_d = std::max<std::size_t>(1, word.size() / 3) + 1;
    for (auto c : candidates) {
        if (c.size() > 200) continue;
        std::size_t d = edit_distance(w, lower(c));
        if (d < best_d) best_d = d, best = std::string(c);
    }
    return best;
}

}  // namespace envbox
