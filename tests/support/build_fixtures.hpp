#pragma once
// Source distributions for the build tests: real .tar.gz sdists written by Python's tarfile (as
// setuptools writes them), built with Debian's setuptools and wheel wheels
// (python3-setuptools-whl, python3-wheel-whl) as the build requirements.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "envbox/install/build.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/process.hpp"
#include "temp_dir.hpp"

namespace envboxtest {

namespace fs = std::filesystem;
using namespace envbox;

// Debian's wheels of the build requirements (python3-setuptools-whl, python3-wheel-whl).
inline std::vector<fs::path> debian_build_path() {
    std::vector<fs::path> out;
    for (const char* stem : {"setuptools-", "wheel-"})
        for (const auto& e : fs::directory_iterator("/usr/share/python-wheels"))
            if (e.path().filename().string().rfind(stem, 0) == 0) out.push_back(e.path());
    REQUIRE(out.size() == 2);
    return out;
}

// A .tar.gz sdist NAME-1.0 of `files` ({path below the top folder, text}), made by tarfile.
inline fs::path make_sdist(const fs::path& dir, const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& files) {
    const fs::path tree = dir / "tree" / name, archive = dir / (name + ".tar.gz");
    for (const auto& [path, text] : files) {
        fs::create_directories((tree / path).parent_path());
        write_file_atomic(tree / path, text, 0644, Durability::none);
    }
    auto r =
        run_capture({"python3", "-c",
                     "import sys, tarfile\n"
                     "with tarfile.open(sys.argv[1], 'w:gz', format=tarfile.PAX_FORMAT) as t:\n"
                     "    t.add(sys.argv[2], arcname=sys.argv[3])\n",
                     archive.string(), tree.string(), name});
    REQUIRE(r.status == 0);
    return archive;
}

inline install::BuildRequest request(const TempDir& home, const fs::path& sdist) {
    install::BuildRequest r;
    r.sdist = sdist;
    r.work = home.path / ("build-" + sdist.filename().string());
    r.python = "/usr/bin/python3";
    r.build_path = debian_build_path();
    r.read_only = home.path;
    r.timeout = std::chrono::seconds(120);
    return r;
}

}  // namespace envboxtest
