#include "cli/lock_agreement.hpp"

#include <cstdio>

namespace envbox::cli {

void note_lock_agreement(const GlobalOptions& global, const ops::LockAgreement& a) {
    if (global.verbosity < 0 || !a.disagrees()) return;
    std::string text = "note: " + a.env + ": " + a.summary() + "\n  to make them agree:";
    const auto remedies = a.remedies();
    for (std::size_t i = 0; i < remedies.size(); ++i)
        text += std::string(i ? ";\n  or " : " ") + remedies[i];
    std::fprintf(stderr, "%s\n", text.c_str());
}

Json lock_agreement_json(const ops::LockAgreement& a) {
    Json remedies = Json::array();
    for (const auto& r : a.remedies())
        remedies.push_back(r);
    return Json{{"agrees", !a.disagrees()},
                {"current", a.current ? Json(*a.current) : Json()},
                {"lock", a.lock_path.empty() ? Json() : Json(a.lock_name())},
                {"lock_generation", a.lock_generation ? Json(*a.lock_generation) : Json()},
                {"rolled_back", a.rolled_back},
                {"note", a.disagrees() ? Json(a.summary()) : Json()},
                {"remedies", std::move(remedies)}};
}

}  // namespace envbox::cli
