#pragma once
/// Small text helpers shared by the manifest editor, `add`/`remove`, `init --from` and the
/// commands envbox prints for the user to copy.

#include <string>
#include <string_view>

namespace envbox {

/// `s` without its leading and trailing blanks, tabs, carriage returns and line feeds.
std::string trimmed(std::string_view s);

/// `text` as one shell word for a command envbox prints for the user to copy: as it is when it
/// holds only characters no shell treats specially, else single-quoted.
std::string shell_word(const std::string& text);

}  // namespace envbox
