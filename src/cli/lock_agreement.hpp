#pragma once
// How every status command says that ENV's current generation is not the project's lock
// (ops/lock_agreement.hpp): one note on stderr, one JSON object, the same words everywhere.

#include <string>

#include "cli/options.hpp"
#include "envbox/ops/lock_agreement.hpp"
#include "envbox/util/json.hpp"

namespace envbox::cli {

/// On stderr, unless -q or they agree: "note: ENV: generation 4 is current (rolled back);
/// manifests/pylock.ENV.toml is generation 5's lock", then one line per way to make them agree.
void note_lock_agreement(const GlobalOptions& global, const ops::LockAgreement& a);

/// The same as JSON: {"agrees", "current", "lock", "lock_generation", "rolled_back", "note",
/// "remedies"}; `agrees` is true where nothing is compared (no project, `create --lock FILE`).
Json lock_agreement_json(const ops::LockAgreement& a);

}  // namespace envbox::cli
