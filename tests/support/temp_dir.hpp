#pragma once
// A temporary directory for one test, removed with everything in it when the test ends (the
// store's read-only objects too: their directories are writable, so remove_all works).
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace envboxtest {

struct TempDir {
    std::filesystem::path path;
    explicit TempDir(std::string_view prefix = "envbox-test") {
        std::string tmpl =
            (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

}  // namespace envboxtest
