#include "envbox/ops/project.hpp"

#include "envbox/util/error.hpp"

namespace envbox::ops {

const Project& Project::required(std::string_view hint) const {
    if (root.empty())
        throw Error(ErrorCode::invalid_input,
                    "no project here (no manifests/ directory in this directory or above)" +
                        std::string(hint));
    return *this;
}

}  // namespace envbox::ops
