// envbox's pip: the code of `pip/__init__.py` in every environment that locks no real pip (see
// env/venv.hpp) is src/env/pip_shim.py, compiled in as a string (CMakeLists.txt writes it into
// pip_shim_code.inc). Python 3.8+, the standard library only, and packaging when the
// environment has it. venv.cpp puts the lines naming the environment (ENV) and its
// site-packages (SITE_DIRS) where the marker line is. Its output is pip 23.0's, line for line
// (tests/install/test_pip.py runs both on one environment).
#include "pip_shim.hpp"

namespace envbox::env {

std::string_view pip_shim_code() {
    static constexpr std::string_view kCode =
#include "pip_shim_code.inc"
        ;
    return kCode;
}

}  // namespace envbox::env
