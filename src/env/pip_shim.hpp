#pragma once
// envbox's pip: the Python code venv.cpp writes as `pip/__init__.py` into an environment's
// site-packages (see `venv_skeleton` in envbox/env/venv.hpp).

#include <string_view>

namespace envbox::env {

/// The marker line of `pip_shim_code()` that venv.cpp replaces with the generated lines
/// `ENV = …` (the environment's name) and `SITE_DIRS = (…)` (its site-packages folders,
/// relative to the one holding `pip/`).
inline constexpr std::string_view kPipShimGenerated = "# @ENVBOX-GENERATED@\n";

/// The module's code: pip's read-only commands for the environment, refusals for the rest.
std::string_view pip_shim_code();

}  // namespace envbox::env
