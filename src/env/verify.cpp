#include "envbox/env/verify.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

std::string hash_at(int dir, const char* rel, bool& ok) {
    Fd f{::openat(dir, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
    ok = f.fd >= 0;
    if (!ok) return {};
    Sha256 h;
    std::vector<char> buf(1 << 16);
    for (;;) {
        ssize_t n = ::read(f.fd, buf.data(), buf.size());
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            ok = false;
            return {};
        }
        h.update(buf.data(), static_cast<std::size_t>(n));
    }
    return to_hex(h.finish());
}

}  // namespace

const char* drift_kind_name(Drift::Kind kind) {
    switch (kind) {
        case Drift::Kind::missing: return "missing";
        case Drift::Kind::extra: return "extra";
        case Drift::Kind::modified: return "modified";
        case Drift::Kind::foreign_dist_info: return "foreign";
        case Drift::Kind::store_object_writable: return "store";
    }
    return "?";
}

VerifyReport verify_tree(const store::Store& store, const VenvLayout& layout, const InstallPlan& plan,
                         const std::vector<VenvEntry>& skeleton, bool deep, unsigned jobs) {
    VerifyReport report;
    std::mutex mutex;
    auto add = [&](Drift::Kind k, std::string path, std::string detail) {
        std::lock_guard lock(mutex);
        report.drift.push_back({k, std::move(path), std::move(detail)});
    };
    Fd root{::open(layout.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (root.fd < 0)
        throw Error(ErrorCode::generic, "cannot open " + layout.root.string() + ": " + std::strerror(errno));
    const int objects = store.objects_dir_fd();

    // 1. Every planned file: present, same inode as its object (else same content), right mode.
    std::atomic<std::size_t> hashed{0};
    constexpr std::size_t kChunk = 256;
    const auto& files = plan.files;
    parallel_for((files.size() + kChunk - 1) / kChunk, jobs, [&](std::size_t c) {
        std::size_t end = std::min(files.size(), (c + 1) * kChunk);
        for (std::size_t i = c * kChunk; i < end; ++i) {
            const PlannedFile& f = files[i];
            struct stat st {};
            if (::fstatat(root.fd, f.rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                add(Drift::Kind::missing, f.rel, "");
                continue;
            }
            if (!S_ISREG(st.st_mode)) {
                add(Drift::Kind::modified, f.rel, "not a regular file");
                continue;
            }
            if (f.executable != ((st.st_mode & 0100) != 0))
                add(Drift::Kind::modified, f.rel, f.executable ? "lost its exec bit" : "became executable");
            if (f.object) {
                std::string orel = store.object_relpath(f.object->digest, f.object->executable);
                struct stat ost {};
                bool have_object = ::fstatat(objects, orel.c_str(), &ost, 0) == 0;
                bool writable = have_object && (ost.st_mode & 0222) != 0;
                if (writable)
                    add(Drift::Kind::store_object_writable, store.object_path(f.object->digest, f.object->executable).string(),
                        "store object is writable (linked as " + f.rel + ")");
                // Same inode as a read-only object: the content is the object's. A writable
                // object may have been edited in place, so its content is checked too.
                bool same_inode = have_object && ost.st_ino == st.st_ino && ost.st_dev == st.st_dev;
                if (same_inode && !deep && !writable) continue;
                if (static_cast<std::uint64_t>(st.st_size) != f.object->size) {
                    add(Drift::Kind::modified, f.rel, "size " + std::to_string(st.st_size) + ", expected " +
                                                          std::to_string(f.object->size));
                    continue;
                }
                bool ok = false;
                std::string got = hash_at(root.fd, f.rel.c_str(), ok);
                ++hashed;
                if (!ok) add(Drift::Kind::modified, f.rel, "unreadable");
                else if (got != f.object->digest) add(Drift::Kind::modified, f.rel, "content differs from the lock");
            } else {
                bool ok = false;
                std::string got = hash_at(root.fd, f.rel.c_str(), ok);
                ++hashed;
                if (!ok || got != to_hex(sha256(f.content)))
                    add(Drift::Kind::modified, f.rel, "content differs from what envbox wrote");
            }
        }
    });
    report.files_checked = files.size();
    report.hashed = hashed;

    // 2. The skeleton: symlinks and small files.
    std::unordered_set<std::string> expected;
    expected.reserve(files.size() + plan.dirs.size() + 16);
    for (const auto& f : files) expected.insert(f.rel);
    for (const auto& d : plan.dirs) expected.insert(d);
    for (const auto& e : skeleton) {
        expected.insert(e.rel);
        for (auto slash = e.rel.rfind('/'); slash != std::string::npos && slash > 0; slash = e.rel.rfind('/', slash - 1))
            expected.insert(e.rel.substr(0, slash));
        if (!e.symlink_target.empty()) {
            char buf[4096];
            ssize_t n = ::readlinkat(root.fd, e.rel.c_str(), buf, sizeof buf);
            if (n < 0) add(Drift::Kind::missing, e.rel, "symlink");
            else if (std::string(buf, static_cast<std::size_t>(n)) != e.symlink_target)
                add(Drift::Kind::modified, e.rel, "points to " + std::string(buf, static_cast<std::size_t>(n)));
        } else {
            bool ok = false;
            std::string got = hash_at(root.fd, e.rel.c_str(), ok);
            if (!ok) add(Drift::Kind::missing, e.rel, "");
            else if (got != to_hex(sha256(e.content))) add(Drift::Kind::modified, e.rel, "content differs");
        }
        report.files_checked++;
    }
    for (const char* d : {"include", "lib", "bin"}) expected.insert(d);
    for (const fs::path& p : {layout.purelib, layout.platlib, layout.scripts}) {
        std::string rel = p.lexically_relative(layout.root).string();
        for (auto slash = rel.size(); slash != std::string::npos && slash > 0; slash = rel.rfind('/', slash - 1))
            expected.insert(rel.substr(0, slash));
    }

    // 3. Everything on disk the plan does not name.
    std::vector<std::string> stack{""};
    while (!stack.empty()) {
        std::string dir = std::move(stack.back());
        stack.pop_back();
        int dfd = dir.empty() ? ::dup(root.fd) : ::openat(root.fd, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0) continue;
        DIR* d = ::fdopendir(dfd);
        if (!d) {
            ::close(dfd);
            continue;
        }
        while (dirent* e = ::readdir(d)) {
            std::string_view name = e->d_name;
            if (name == "." || name == "..") continue;
            std::string rel = dir.empty() ? std::string(name) : dir + "/" + std::string(name);
            if (dir.empty() && name == ".envbox") continue;
            if (name == "__pycache__") continue;  // Python's own caches
            bool is_dir = e->d_type == DT_DIR;
            if (e->d_type == DT_UNKNOWN) {
                struct stat st {};
                is_dir = ::fstatat(root.fd, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
            }
            if (expected.count(rel)) {
                if (is_dir) stack.push_back(rel);
                continue;
            }
            if (is_dir && name.ends_with(".dist-info")) {
                std::string installer = "unknown installer";
                try {
                    installer = read_file(layout.root / rel / "INSTALLER");
                    while (!installer.empty() && (installer.back() == '\n' || installer.back() == '\r')) installer.pop_back();
                    installer = "installed by " + installer;
                } catch (const Error&) {
                }
                add(Drift::Kind::foreign_dist_info, rel, installer);
                continue;
            }
            add(Drift::Kind::extra, rel + (is_dir ? "/" : ""), is_dir ? "directory" : "");
        }
        ::closedir(d);
    }
    std::sort(report.drift.begin(), report.drift.end(), [](const Drift& a, const Drift& b) {
        return std::tie(a.path, a.kind) < std::tie(b.path, b.kind);
    });
    return report;
}

}  // namespace envbox::env
