#pragma once
/// A source distribution unpacked for a build: `NAME-VERSION.tar.gz` (PEP 625; what setuptools
/// writes) or a legacy `.zip`, read as hostile until unpacked. Only regular files and
/// directories are made, each under the one top-level folder every sdist has; a name that is
/// absolute, climbs with `..`, or is given twice, a link, a device, more bytes or members than
/// `tar::Limits` allows, are refused naming the archive and the member, and nothing is left.

#include <filesystem>

#include "envbox/index/fetch.hpp"
#include "envbox/util/tar.hpp"

namespace envbox::install {

/// Unpacks the sdist at `archive` into `dest` (which must not exist; made 0700, removed again
/// on any failure) and returns its project folder: the one top-level folder, which must hold a
/// `pyproject.toml` or a `setup.py`. `filename` (the lock's name of it; default the archive's)
/// says its format. Throws `Error` (integrity for what the archive holds, invalid_input for a
/// file name that is no sdist's).
std::filesystem::path unpack_sdist(const std::filesystem::path& archive,
                                   const std::filesystem::path& dest,
                                   const tar::Limits& limits = {}, std::string filename = {});

/// The verified bytes of a locked sdist as a local file: the lock's path or file: URL (relative
/// to `lock_dir`), else `downloads`/<sha256>.whl (downloads are named by digest alone), else
/// downloaded there by its URL; hashed each time, and a file of other bytes is an integrity
/// error naming it (a bad download is removed). `offline`: one that would be downloaded is a
/// network error (exit 4) instead.
std::filesystem::path locate_sdist(const index::ArtifactRequest& request,
                                   const std::filesystem::path& lock_dir,
                                   const std::filesystem::path& downloads,
                                   const index::HttpOptions& http, bool offline = false);

}  // namespace envbox::install
