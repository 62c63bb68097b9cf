// Build records: `store-v1/builds/<key>` names the wheel a build with that key made
// (`envbox-built-wheel 1`, a `wheel SHA256 FILENAME` line, an `origin local|received` line,
// then the key's text as provenance).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "envbox/pep/digest.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/unique_fd.hpp"

namespace envbox::store {
namespace {

constexpr std::string_view kHeader = "envbox-built-wheel 1";
constexpr std::size_t kMaxRecordBytes = 1u << 20;

void check_key(std::string_view key) {
    if (!pep::is_sha256_hex(key))
        throw Error(ErrorCode::invalid_input, "not a build key: '" + std::string(key) + "'");
}

}  // namespace

std::optional<BuildRecord> Store::load_build(std::string_view key) const {
    check_key(key);
    UniqueFd dir = open_own_dir_at_path(layout_.root(), layout_.builds());
    if (!dir) return std::nullopt;
    const std::filesystem::path path = layout_.builds() / std::string(key);
    struct stat st {};
    UniqueFd fd = open_own_file(dir.get(), path, O_RDONLY, st);
    if (!fd) return std::nullopt;
    if (static_cast<std::uint64_t>(st.st_size) > kMaxRecordBytes)
        throw Error(ErrorCode::integrity, path.string() + " is larger than a build record");
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    const ssize_t n = ::pread(fd.get(), text.data(), text.size(), 0);
    if (n != static_cast<ssize_t>(text.size()))
        throw Error(ErrorCode::integrity, path.string() + " could not be read whole");
    kv::Reader r(text, path.string());
    auto head = r.next();
    if (!head || head->text != kHeader) throw r.error("not an envbox build record");
    auto wheel = r.next();
    if (!wheel || wheel->key != "wheel") throw r.error("no wheel line");
    const auto fields = kv::split_fields(wheel->value);
    if (fields.size() != 2 || !pep::is_sha256_hex(fields[0]) ||
        !pep::WheelFilename::parse(fields[1]))
        throw r.error("malformed wheel line");
    BuildRecord out{std::string(fields[0]), std::string(fields[1]), "", false, false};
    if (r.rest().starts_with("origin ")) {
        auto origin = r.next();
        if (origin->value != "local" && origin->value != "received")
            throw r.error("malformed origin line");
        out.local = origin->value == "local";
    }
    out.provenance = std::string(r.rest());
    out.owned = st.st_uid == ::geteuid() && (st.st_mode & 022) == 0;
    return out;
}

void Store::record_build(std::string_view key, const BuildRecord& record) const {
    check_key(key);
    if (!pep::is_sha256_hex(record.wheel_sha256) || !pep::WheelFilename::parse(record.filename))
        throw Error(ErrorCode::invalid_input, "not a built wheel: " + record.filename);
    make_own_dir_at_path(layout_.root(), layout_.builds());  // never through a planted link
    kv::Writer w(kHeader);
    w.add_fields("wheel", {record.wheel_sha256, record.filename});
    w.add("origin", record.local ? "local" : "received");
    w.raw(record.provenance);
    write_file_atomic(layout_.builds() / std::string(key), std::move(w).take(), 0444,
                      Durability::fsync);
}

}  // namespace envbox::store
