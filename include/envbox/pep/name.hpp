#pragma once
/// Project, extra and group names (PEP 503 "normalized names", PEP 685). Pure, no I/O.

#include <string>
#include <string_view>

namespace envbox::pep {

/// True when `name` is a valid project name: ASCII letters/digits, with `.`, `_`, `-` allowed
/// only between them (`^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$`, case-insensitive).
bool is_valid_name(std::string_view name);

/// The normalised form: lowercase, each run of `-`, `_`, `.` replaced by one `-`.
/// Works on any input (lenient); validate with `is_valid_name` where that matters.
std::string canonicalize_name(std::string_view name);

/// True when `name` is already in normalised form (valid and equal to its canonical form).
bool is_normalized_name(std::string_view name);

/// The form used in wheel, sdist and `.dist-info` names: canonical, with `-` → `_`.
std::string filename_safe_name(std::string_view name);

/// ASCII lowercase copy.
std::string ascii_lower(std::string_view s);

}  // namespace envbox::pep
