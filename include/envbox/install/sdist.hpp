#pragma once
/// A source distribution unpacked for a build: `NAME-VERSION.tar.gz` (PEP 625; what setuptools
/// writes) or a legacy `.zip`, read as hostile until unpacked. Only regular files and
/// directories are made, each under the one top-level folder every sdist has; a name that is
/// absolute, climbs with `..`, or is given twice, a link, a device, more bytes or members than
/// `tar::Limits` allows, are refused naming the archive and the member, and nothing is left.

#include <filesystem>

#include "envbox/util/tar.hpp"

namespace envbox::install {

/// Unpacks the sdist at `archive` into `dest` (which must not exist; made 0700, removed again
/// on any failure) and returns its project folder: the one top-level folder, which must hold a
/// `pyproject.toml` or a `setup.py`. Throws `Error` (integrity for what the archive holds,
/// invalid_input for a file name that is no sdist's).
std::filesystem::path unpack_sdist(const std::filesystem::path& archive,
                                   const std::filesystem::path& dest,
                                   const tar::Limits& limits = {});

}  // namespace envbox::install
