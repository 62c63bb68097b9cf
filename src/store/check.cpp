// The store's checks: whether an object looks as ingest left it (`object_touched`), and which
// objects of a wheel are missing, touched or, when hashed, wrong (`Store::damaged_objects`).
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
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

std::optional<Store::Damage> Store::damaged_objects(const WheelFiles& w, bool hash) const {
    Damage damage;
    auto add = [&](const WheelFile& f, const std::string& why) {
        if (damage.digests.empty())
            damage.first =
                object_path(f.digest, f.executable).string() + " (" + f.path + "): " + why;
        damage.digests.insert(f.digest);
    };
    for (const auto& f : w.files) {
        const std::string rel = object_relpath(f.digest, f.executable);
        struct stat st {};
        if (::fstatat(objects_dir_fd(), rel.c_str(), &st, 0) != 0) {
            add(f, std::strerror(errno));
        } else if (auto why = object_touched(st, f.size, f.executable)) {
            add(f, *why);
        } else if (hash) {
            try {
                if (to_hex(sha256_file(object_path(f.digest, f.executable))) != f.digest)
                    add(f, "content differs from its name");
            } catch (const Error& e) {
                add(f, e.what());
            }
        }
    }
    if (damage.digests.empty()) return std::nullopt;
    return damage;
}

}  // namespace envbox::store
