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

lock::LockFile Project::read_lock(const std::string& env) const {
    const std::filesystem::path path = lock(env);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw Error(ErrorCode::invalid_input, "no lock file " + path.string() +
                                                  " (run `envbox lock " + env + "` to write it)");
    auto read = lock::read_lock_file(path);
    if (!read) throw read.error();
    return std::move(*read);
}

}  // namespace envbox::ops
