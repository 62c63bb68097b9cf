#pragma once
/// Small text helpers shared by the manifest editor, `add`/`remove` and `init --from`.

#include <string>
#include <string_view>

namespace envbox {

/// `s` without its leading and trailing blanks, tabs, carriage returns and line feeds.
std::string trimmed(std::string_view s);

}  // namespace envbox
