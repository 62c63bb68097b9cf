// Kept wheel archives: `wheels/<sha256>/archive` beside the wheel's file list, for `push` and
// `pack` (docs/ARCHITECTURE.md, "The store").

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/own_tree.hpp"
#include "store/file_list.hpp"

namespace fs = std::filesystem;

namespace envbox::store {

fs::path Store::archive_path(std::string_view wheel_sha256) const {
    require_digest(wheel_sha256, "wheel");
    return layout_.wheels() / std::string(wheel_sha256) / "archive";
}

std::optional<fs::path> Store::kept_archive(std::string_view wheel_sha256,
                                            std::optional<std::uint64_t> size) const {
    fs::path p = archive_path(wheel_sha256);
    // A link planted at the archive, or at a folder above it, is refused, never read through.
    require_no_link_below(layout_.root(), p, /*is_file=*/true);
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        (size && static_cast<std::uint64_t>(st.st_size) != *size))
        return std::nullopt;
    return p;
}

void Store::keep_archive(std::string_view wheel_sha256, const fs::path& verified) const {
    fs::path p = archive_path(wheel_sha256);
    std::error_code ec;
    if (!fs::exists(p.parent_path() / "files", ec) || fs::exists(p, ec)) {
        fs::remove(verified, ec);
        return;
    }
    // rename: the file is whole under its final name or not there at all. Two keepers of one
    // wheel race harmlessly: both hold the same verified bytes.
    if (::chmod(verified.c_str(), 0444) != 0 || ::rename(verified.c_str(), p.c_str()) != 0)
        throw Error(ErrorCode::generic, "cannot keep " + verified.string() + " as " + p.string() +
                                            ": " + std::strerror(errno));
}

}  // namespace envbox::store
