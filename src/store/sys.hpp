#pragma once
// System-call failures as the store reports them, private to the store.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::store {

/// Throws "WHAT PATH: strerror(err)" (`generic`).
[[noreturn]] inline void sys_fail(const std::string& what, const std::filesystem::path& path,
                                  int err) {
    throw Error(ErrorCode::generic, what + " " + path.string() + ": " + std::strerror(err));
}

/// Creates `p` and its parents; throws (`generic`) when that fails.
inline void make_dir(const std::filesystem::path& p) {
    std::error_code ec;
    std::filesystem::create_directories(p, ec);
    if (ec)
        throw Error(ErrorCode::generic,
                    "cannot create directory " + p.string() + ": " + ec.message());
}

/// Writes all of `data` to `fd` or throws, naming `path`.
inline void write_or_fail(int fd, const void* data, std::size_t size,
                          const std::filesystem::path& path) {
    if (!write_all_fd(fd, data, size)) sys_fail("cannot write", path, errno);
}

}  // namespace envbox::store
