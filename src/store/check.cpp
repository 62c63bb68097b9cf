// The store's checks: whether an object looks as ingest left it (`object_touched`), which
// objects of a wheel are missing, touched or, when hashed, wrong (`Store::damaged_objects`), and
// the whole store's (`Store::check`, the fsck).
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/sha256.hpp"

namespace envbox::store {

std::optional<std::string> object_touched(const struct stat& st, std::uint64_t size,
                                          bool executable) {
    if (!S_ISREG(st.st_mode)) return std::string("not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) != size)
        return "size " + std::to_string(st.st_size) + ", expected " + std::to_string(size);
    if ((st.st_mode & 07777) != object_mode(executable)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "mode %04o, expected %04o",
                      static_cast<unsigned>(st.st_mode & 07777),
                      static_cast<unsigned>(object_mode(executable)));
        return std::string(buf);
    }
    if (st.st_mtim.tv_sec != kObjectMtime || st.st_mtim.tv_nsec != 0)
        return std::string("modified since it was stored");
    return std::nullopt;
}

namespace {

// The objects of `files` (members of a wheel, or `.pyc` files named by their sources) that are
// missing, touched, or with `hash` wrong.
std::optional<Store::Damage> damaged_files(const Store& store, const std::vector<WheelFile>& files,
                                           std::string_view what, bool hash) {
    Store::Damage damage;
    auto add = [&](const WheelFile& f, const std::string& why) {
        if (damage.digests.empty())
            damage.first = store.object_path(f.digest, f.executable).string() + " (" +
                           std::string(what) + f.path + "): " + why;
        damage.digests.insert(f.digest);
    };
    for (const auto& f : files) {
        const std::string rel = store.object_relpath(f.digest, f.executable);
        struct stat st {};
        if (::fstatat(store.objects_dir_fd(), rel.c_str(), &st, 0) != 0) {
            add(f, std::strerror(errno));
        } else if (auto why = object_touched(st, f.size, f.executable)) {
            add(f, *why);
        } else if (hash) {
            try {
                if (to_hex(sha256_file(store.object_path(f.digest, f.executable))) != f.digest)
                    add(f, "content differs from its name");
            } catch (const Error& e) {
                add(f, e.what());
            }
        }
    }
    if (damage.digests.empty()) return std::nullopt;
    return damage;
}

std::vector<WheelFile> pyc_objects(const WheelBytecode& b) {
    std::vector<WheelFile> out;
    out.reserve(b.files.size());
    for (const auto& f : b.files)
        out.push_back(f.pyc);
    return out;
}

}  // namespace

std::optional<Store::Damage> Store::damaged_objects(const WheelFiles& w, bool hash) const {
    return damaged_files(*this, w.files, "", hash);
}

std::optional<Store::Damage> Store::damaged_objects(const WheelBytecode& b, bool hash) const {
    return damaged_files(*this, pyc_objects(b), "bytecode of ", hash);
}

}  // namespace envbox::store

namespace envbox::store {
namespace {

// One object to check, and the first member (and wheel) that names it, for the report.
struct Named {
    std::string digest;
    bool executable = false;
    std::uint64_t size = 0;
    std::string member, wheel;
};

// Every bytecode list of wheel `w`, read; a list that does not read, names an unknown key, or
// names a source the wheel does not hold as it is, is a problem.
std::vector<WheelBytecode> bytecode_lists(const Store& store, const WheelFiles& w,
                                          CheckResult& result) {
    std::vector<WheelBytecode> out;
    std::error_code ec;
    const auto dir = store.layout().wheels() / w.wheel_sha256 / "bytecode";
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.find(".tmp.") != std::string::npos) continue;  // a publish cut short; gc's
        auto key = BytecodeKey::parse(name);
        if (!key) {
            result.problems.push_back("bytecode list " + e.path().string() + ": unknown key");
            continue;
        }
        try {
            if (auto b = store.load_bytecode(w.wheel_sha256, *key)) {
                for (const auto& f : b->files)
                    if (const WheelFile* src = w.find(f.source);
                        !src || src->digest != f.source_digest)
                        result.problems.push_back("bytecode list " + e.path().string() + ": " +
                                                  f.source + " is not that source in " +
                                                  w.filename);
                out.push_back(std::move(*b));
            }
        } catch (const Error& err) {
            result.problems.push_back("wheel " + w.wheel_sha256 + ": " + err.message());
        }
    }
    return out;
}

// Every published file list, read; a list that does not read is a problem, not an error.
std::vector<Named> objects_of_lists(const Store& store, CheckResult& result) {
    std::vector<Named> objects;
    std::set<std::string> seen;
    std::error_code ec;
    std::vector<std::string> shas;
    for (const auto& w : std::filesystem::directory_iterator(store.layout().wheels(), ec))
        shas.push_back(w.path().filename().string());
    std::sort(shas.begin(), shas.end());
    for (const auto& sha : shas) {
        std::optional<WheelFiles> files;
        try {
            files = store.load_wheel(sha);
        } catch (const Error& e) {
            result.problems.push_back("wheel " + sha + ": " + e.message());
            continue;
        }
        if (!files) continue;  // a folder without a published list: an ingest never finished
        ++result.wheels;
        for (const auto& f : files->files)
            if (seen.insert(store.object_relpath(f.digest, f.executable)).second)
                objects.push_back({f.digest, f.executable, f.size, f.path, files->filename});
        for (const auto& b : bytecode_lists(store, *files, result))
            for (const auto& f : b.files)
                if (seen.insert(store.object_relpath(f.pyc.digest, false)).second)
                    objects.push_back({f.pyc.digest, false, f.pyc.size, "bytecode of " + f.source,
                                       files->filename});
    }
    return objects;
}

}  // namespace

CheckResult Store::check(bool hash, unsigned jobs) const {
    CheckResult result;
    std::vector<Named> objects = objects_of_lists(*this, result);
    result.objects = objects.size();
    std::vector<std::string> why(objects.size());
    parallel_for(objects.size(), jobs, [&](std::size_t i) {
        const Named& o = objects[i];
        struct stat st {};
        if (::fstatat(objects_dir_fd(), object_relpath(o.digest, o.executable).c_str(), &st, 0) !=
            0)
            why[i] = std::strerror(errno);
        else if (auto touched = object_touched(st, o.size, o.executable))
            why[i] = *touched;
        else if (hash)
            try {
                if (to_hex(sha256_file(object_path(o.digest, o.executable))) != o.digest)
                    why[i] = "content differs from its name";
            } catch (const Error& e) {
                why[i] = e.message();
            }
    });
    if (hash) result.hashed = objects.size();
    for (std::size_t i = 0; i < objects.size(); ++i)
        if (!why[i].empty())
            result.problems.push_back(
                "object " + object_path(objects[i].digest, objects[i].executable).string() + " (" +
                objects[i].member + " of " + objects[i].wheel + "): " + why[i]);
    return result;
}

}  // namespace envbox::store
