// Ingest, once every task has run: the wheel checked (one .dist-info directory, WHEEL and
// METADATA, its identity, every member against RECORD), then its new objects moved in.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <unordered_map>

#include "envbox/pep/digest.hpp"
#include "envbox/pep/metadata.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/pep/wheel.hpp"
#include "envbox/util/fs.hpp"
#include "store/ingest_impl.hpp"
#include "store/sys.hpp"

namespace envbox::store {

// Exactly one .dist-info directory, named for this wheel.
std::string Ingest::Impl::find_dist_info() const {
    std::set<std::string> dist_infos;
    for (const auto& f : files) {
        auto slash = f.path.find('/');
        if (slash != std::string::npos && f.path.substr(0, slash).ends_with(".dist-info"))
            dist_infos.insert(f.path.substr(0, slash));
    }
    std::string found;
    for (const auto& d : dist_infos) {
        auto dash = d.rfind('-', d.size() - 10);
        std::string dname = d.substr(0, dash == std::string::npos ? 0 : dash);
        if (dash != std::string::npos &&
            pep::canonicalize_name(dname) == parsed_name.canonical_name)
            found = d;
    }
    if (dist_infos.size() != 1 || found.empty())
        throw member_error(
            "expected exactly one .dist-info directory for '" + parsed_name.name + "', found " +
            (dist_infos.empty()
                 ? std::string("none")
                 : *dist_infos.begin() + (dist_infos.size() > 1 ? " and others" : "")));
    return found;
}

const std::string* Ingest::Impl::text_of(const std::string& dist_info,
                                         const std::string& leaf) const {
    const std::string path = dist_info + "/" + leaf;
    for (std::size_t k = 0; k < files.size(); ++k)
        if (files[k].path == path) return &texts[k];
    return nullptr;
}

void Ingest::Impl::read_wheel_and_metadata(WheelFiles& w) const {
    const std::string* wheel_text = text_of(w.dist_info, "WHEEL");
    if (!wheel_text) throw member_error("no " + w.dist_info + "/WHEEL");
    auto info = pep::parse_wheel_info(*wheel_text);
    if (!info) throw member_error(info.error().message());
    w.root_is_purelib = info->root_is_purelib;
    const std::string* metadata = text_of(w.dist_info, "METADATA");
    if (!metadata) throw member_error("no " + w.dist_info + "/METADATA");
    for (const auto& [k, v] : pep::parse_headers(*metadata)) {
        std::string key = pep::ascii_lower(k);
        if (key == "name" && w.name.empty()) w.name = v;
        if (key == "version" && w.version.empty()) w.version = v;
    }
    if (w.name.empty() || w.version.empty()) throw member_error("METADATA lacks Name or Version");
}

// The wheel is the one its file name (and so the lock, whose version must match the file name)
// says, as pip and uv require: METADATA's Name is a valid PEP 508 name of the file name's
// project (it also builds the .data/headers install path) and its Version, like the
// .dist-info directory's, is a PEP 440 version equal to the file name's.
void Ingest::check_identity(const Impl& im, const WheelFiles& w) {
    const pep::WheelFilename& file = im.parsed_name;
    if (!pep::is_valid_name(w.name))
        throw im.member_error("METADATA Name '" + w.name + "' is not a valid project name");
    if (pep::canonicalize_name(w.name) != file.canonical_name)
        throw im.member_error("METADATA Name '" + w.name +
                              "' is not the project of the file name ('" + file.name + "')");
    const std::string wanted = file.version.str();
    auto version = pep::Version::try_parse(w.version);
    if (!version || w.version.find_first_of(" \t\r\n") != std::string::npos)
        throw im.member_error("METADATA Version '" + w.version +
                              "' is not a PEP 440 version (the file name says " + wanted +
                              "); refusing to install it");
    if (*version != file.version)
        throw im.member_error("METADATA Version " + w.version +
                              " differs from the version in the file name and the lock, " + wanted +
                              "; refusing to install it as either");
    // "name-VERSION.dist-info"; finish found the dash already.
    const std::size_t end = w.dist_info.size() - std::string_view(".dist-info").size();
    const std::string dir_version =
        w.dist_info.substr(w.dist_info.rfind('-', end) + 1, end - w.dist_info.rfind('-', end) - 1);
    auto dir_parsed = pep::Version::try_parse(dir_version);
    if (!dir_parsed || *dir_parsed != file.version)
        throw im.member_error("the .dist-info directory " + w.dist_info + " names version " +
                              dir_version + ", the file name and the lock " + wanted +
                              "; refusing to install it");
}

void Ingest::Impl::check_record(const WheelFiles& w) const {
    const std::string record_path = w.dist_info + "/RECORD";
    const std::string* record_text = text_of(w.dist_info, "RECORD");
    if (!record_text) throw member_error("no " + record_path);
    auto rows = pep::parse_record(*record_text);
    if (!rows) throw member_error(rows.error().message());
    std::unordered_map<std::string, const pep::RecordRow*> by_path;
    by_path.reserve(rows->size());
    for (const auto& row : *rows) {
        auto norm = pep::safe_member_path(row.path);
        if (!norm) throw member_error("RECORD: " + norm.error().message());
        by_path[*norm] = &row;
    }
    auto is_signature = [&](const std::string& p) {
        return p == record_path || p == record_path + ".jws" || p == record_path + ".p7s";
    };
    for (std::size_t k = 0; k < files.size(); ++k) {
        const WheelFile& f = files[k];
        auto it = by_path.find(f.path);
        if (is_signature(f.path)) {
            if (f.path != record_path && it != by_path.end())
                throw member_error(f.path + " must not be listed in RECORD");
            continue;
        }
        if (it == by_path.end()) {
            if (pep::in_pycache(f.path)) continue;
            throw member_error("member '" + f.path + "' is not listed in RECORD");
        }
        const pep::RecordRow& row = *it->second;
        if (row.hash.empty()) {
            if (pep::in_pycache(f.path)) continue;
            throw member_error("RECORD lists '" + f.path + "' without a hash");
        }
        if (auto problem = pep::check_record_row(row, digests[k], f.size))
            throw member_error(*problem);
    }
    std::vector<std::string> listed_missing;
    for (const auto& [p, row] : by_path)
        if (!seen.count(p) && !p.ends_with("/")) listed_missing.push_back(p);
    if (!listed_missing.empty()) {
        std::sort(listed_missing.begin(), listed_missing.end());
        throw member_error("RECORD lists '" + listed_missing.front() +
                           "', which is not in the archive");
    }
}

void Ingest::Impl::move_objects_in() const {
    const int objects_fd = store.objects_dir_fd();
    for (const std::string& name : moves) {
        std::string rel = name;
        rel[2] = '/';
        // Atomic where renameat2 is not (NFS, FUSE, 9p): a link that fails with EEXIST.
        int err = rename_noreplace_at(staging_fd.get(), name.c_str(), objects_fd, rel.c_str());
        if (err == 0) continue;
        if (err == EEXIST) {
            // Another ingest stored it first, or a crash left a damaged copy, or a write
            // through an environment touched it: keep an untouched copy, replace any other.
            // Environments that link the replaced inode keep it; their verify reports it.
            struct stat theirs {
            }, mine{};
            if (!replace.count(rel.substr(0, 2) + rel.substr(3, 62)) &&
                ::fstatat(objects_fd, rel.c_str(), &theirs, 0) == 0 &&
                ::fstatat(staging_fd.get(), name.c_str(), &mine, 0) == 0 &&
                !object_touched(theirs, static_cast<std::uint64_t>(mine.st_size),
                                name.ends_with(".x")))
                continue;
            if (::renameat(staging_fd.get(), name.c_str(), objects_fd, rel.c_str()) == 0) continue;
            err = errno;
        }
        if (err == EXDEV || err == EROFS)
            throw Error(ErrorCode::generic,
                        "cannot store object " + (store.layout().objects() / rel).string() + ": " +
                            (err == EROFS ? "the store is read-only"
                                          : "the store is on another mount than " +
                                                store.tmp_dir().string() +
                                                " (a bind mount of store-v1 alone?)") +
                            "; envbox moves verified objects from tmp/ into the store, so the "
                            "whole ENVBOX_HOME must be one writable mount",
                        err);
        sys_fail("cannot store object", store.layout().objects() / rel, err);
    }
}

WheelFiles Ingest::finish(IngestStats* stats) {
    Impl& im = *impl_;
    if (im.check_digest && im.actual_digest != im.wheel_sha256)
        throw digest_mismatch(im.filename, im.archive, im.wheel_sha256, im.actual_digest);
    WheelFiles w;
    w.wheel_sha256 = im.wheel_sha256;
    w.filename = im.filename;
    w.dist_info = im.find_dist_info();
    im.read_wheel_and_metadata(w);
    check_identity(im, w);
    im.check_record(w);
    // Verified: move new objects into place, never replacing an existing one.
    im.move_objects_in();
    w.files = std::move(im.files);
    im.stats.archive_bytes = im.file.size();
    if (stats) *stats = im.stats;
    return w;
}

}  // namespace envbox::store
