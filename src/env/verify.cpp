#include "envbox/env/verify.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

std::string hash_at(int dir, const char* rel, bool& ok) {
    UniqueFd f(::openat(dir, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    ok = static_cast<bool>(f);
    if (!ok) return {};
    Sha256 h;
    std::vector<char> buf(1 << 16);
    for (;;) {
        ssize_t n = ::read(f.get(), buf.data(), buf.size());
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

// Entries of the directory open at `fd` (name, inode, type), read with getdents64 directly:
// readdir() through fdopendir costs an fstat and an fcntl per directory, and a generation has
// over ten thousand directories.
struct RawEntry {
    std::string name;
    ino_t ino;
    unsigned char type;
};

bool read_entries(int fd, std::vector<RawEntry>& out) {
    out.clear();
    alignas(8) char buf[1 << 15];
    for (;;) {
        long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n < 0) return false;
        if (n == 0) return true;
        for (long off = 0; off < n;) {
            auto* d = reinterpret_cast<struct dirent64*>(buf + off);
            std::string_view name = d->d_name;
            if (name != "." && name != "..")
                out.push_back({std::string(name), d->d_ino, d->d_type});
            off += d->d_reclen;
        }
    }
}

}  // namespace

const char* drift_kind_name(Drift::Kind kind) {
    switch (kind) {
        case Drift::Kind::missing:
            return "missing";
        case Drift::Kind::extra:
            return "extra";
        case Drift::Kind::modified:
            return "modified";
        case Drift::Kind::foreign_dist_info:
            return "foreign";
        case Drift::Kind::store_object_touched:
            return "store";
    }
    return "?";
}

std::vector<TreeEntry> walk_generation(const fs::path& root_path) {
    std::vector<TreeEntry> out;
    UniqueFd root(::open(root_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root) throw sys_error("cannot open " + root_path.string(), errno);
    // Each directory is opened relative to its parent (one path component to resolve); when
    // descriptors run short the path from the root is used instead.
    struct Pending {
        std::string rel;
        UniqueFd fd;
    };
    std::vector<Pending> stack;
    stack.push_back({"", UniqueFd(::dup(root.get()))});
    std::vector<RawEntry> entries;
    while (!stack.empty()) {
        Pending top = std::move(stack.back());
        stack.pop_back();
        const std::string dir = std::move(top.rel);
        UniqueFd dfd = top.fd ? std::move(top.fd)
                              : UniqueFd(::openat(root.get(), dir.c_str(),
                                                  O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
        if (!dfd || !read_entries(dfd.get(), entries)) continue;
        for (const auto& e : entries) {
            if (dir.empty() && e.name == ".envbox") continue;
            std::string rel = dir.empty() ? e.name : dir + "/" + e.name;
            bool is_dir = e.type == DT_DIR;
            if (e.type == DT_UNKNOWN) {
                struct stat st {};
                is_dir = ::fstatat(dfd.get(), e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                         S_ISDIR(st.st_mode);
            }
            if (is_dir)
                stack.push_back(
                    {rel, UniqueFd(::openat(dfd.get(), e.name.c_str(),
                                            O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW))});
            out.push_back({std::move(rel), is_dir});
        }
    }
    return out;
}

namespace {

// The inode of every store object ("ab/cdef…" → inode), from the 256 shard directories'
// entries: a few hundred system calls instead of one stat per linked file.
std::unordered_map<std::string, ino_t> object_inodes_of(int objects, std::size_t expected) {
    std::unordered_map<std::string, ino_t> out;
    out.reserve(expected);
    std::vector<RawEntry> entries;
    static const char* hex = "0123456789abcdef";
    for (int i = 0; i < 256; ++i) {
        char shard[3] = {hex[i >> 4], hex[i & 15], 0};
        UniqueFd d(::openat(objects, shard, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!d || !read_entries(d.get(), entries)) continue;
        for (auto& e : entries)
            out.emplace(std::string(shard) + "/" + e.name, e.ino);
    }
    return out;
}

// One verification: the steps of `verify_tree`, sharing the report (locked: files are checked
// from several threads) and the descriptors.
class TreeVerifier {
  public:
    TreeVerifier(const store::Store& store, const VenvLayout& layout, const InstallPlan& plan,
                 bool deep)
        : store_(store),
          layout_(layout),
          plan_(plan),
          deep_(deep),
          root_(::open(layout.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
          objects_(store.objects_dir_fd()) {
        if (!root_) throw sys_error("cannot open " + layout.root.string(), errno);
        if (!deep) object_inodes_ = object_inodes_of(objects_, plan.files.size());
        ::fstat(objects_, &objects_st_);
    }

    /// The skeleton's symlinks and small files; collects every path the plan and the skeleton
    /// name (and their parents) into `expected_`.
    void check_skeleton(const std::vector<VenvEntry>& skeleton) {
        expected_.reserve(plan_.files.size() + plan_.dirs.size() + 16);
        for (const auto& f : plan_.files)
            expected_.insert(f.rel);
        for (const auto& d : plan_.dirs)
            expected_.insert(d);
        for (const auto& e : skeleton) {
            expected_.insert(e.rel);
            for (auto slash = e.rel.rfind('/'); slash != std::string::npos && slash > 0;
                 slash = e.rel.rfind('/', slash - 1))
                expected_.insert(e.rel.substr(0, slash));
            check_skeleton_entry(e);
            report_.files_checked++;
        }
        for (const char* d : {"include", "lib", "bin"})
            expected_.insert(d);
        for (const fs::path& p : {layout_.purelib, layout_.platlib, layout_.scripts}) {
            std::string rel = p.lexically_relative(layout_.root).string();
            for (auto slash = rel.size(); slash != std::string::npos && slash > 0;
                 slash = rel.rfind('/', slash - 1))
                expected_.insert(rel.substr(0, slash));
        }
    }

    /// Every planned file: present, same inode as its object (else same content), right mode.
    void check_planned_files(unsigned jobs) {
        const auto& files = plan_.files;
        std::vector<std::size_t> order(files.size());  // by path: a directory's files adjacent
        for (std::size_t i = 0; i < order.size(); ++i)
            order[i] = i;
        std::sort(order.begin(), order.end(),
                  [&](std::size_t x, std::size_t y) { return files[x].rel < files[y].rel; });
        constexpr std::size_t kChunk = 256;
        parallel_for((files.size() + kChunk - 1) / kChunk, jobs, [&](std::size_t c) {
            std::size_t end = std::min(files.size(), (c + 1) * kChunk);
            UniqueFd dir;  // the directory of the current file, opened once per run of files in it
            std::string dir_rel = "\x01";
            for (std::size_t k = c * kChunk; k < end; ++k) {
                const PlannedFile& f = files[order[k]];
                auto slash = f.rel.rfind('/');
                std::string_view parent = slash == std::string::npos
                                              ? std::string_view(".")
                                              : std::string_view(f.rel).substr(0, slash);
                if (parent != dir_rel) {
                    dir_rel = std::string(parent);
                    dir.reset(::openat(root_.get(), dir_rel.c_str(),
                                       O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
                }
                check_file(f, dir.get(),
                           slash == std::string::npos ? f.rel.c_str() : f.rel.c_str() + slash + 1);
            }
        });
        report_.files_checked += files.size();
        report_.hashed = hashed_;
    }

    /// Everything on disk the plan does not name. Entries come parents first, so whatever lies
    /// under a reported directory is skipped (the directory says it all).
    void check_unplanned(const std::vector<TreeEntry>& on_disk) {
        std::unordered_set<std::string> reported_dirs;
        for (const auto& e : on_disk) {
            if (!reported_dirs.empty()) {
                auto slash = e.rel.rfind('/');
                if (slash != std::string::npos && reported_dirs.count(e.rel.substr(0, slash))) {
                    if (e.is_dir) reported_dirs.insert(e.rel);
                    continue;
                }
            }
            if (expected_.count(e.rel)) continue;
            auto slash = e.rel.rfind('/');
            std::string_view name =
                std::string_view(e.rel).substr(slash == std::string::npos ? 0 : slash + 1);
            if (e.is_dir) reported_dirs.insert(e.rel);
            if (e.is_dir && name.ends_with(".dist-info"))
                add(Drift::Kind::foreign_dist_info, e.rel, installer_of(e.rel));
            else
                add(Drift::Kind::extra, e.rel + (e.is_dir ? "/" : ""), e.is_dir ? "directory" : "");
        }
    }

    /// The report, its drift sorted by path.
    VerifyReport take_report() {
        std::sort(report_.drift.begin(), report_.drift.end(), [](const Drift& a, const Drift& b) {
            return std::tie(a.path, a.kind) < std::tie(b.path, b.kind);
        });
        return std::move(report_);
    }

  private:
    void add(Drift::Kind k, std::string path, std::string detail, std::string digest = {}) {
        std::lock_guard lock(mutex_);
        report_.drift.push_back({k, std::move(path), std::move(detail), std::move(digest)});
    }

    void check_skeleton_entry(const VenvEntry& e) {
        if (!e.symlink_target.empty()) {
            char buf[4096];
            ssize_t n = ::readlinkat(root_.get(), e.rel.c_str(), buf, sizeof buf);
            if (n < 0)
                add(Drift::Kind::missing, e.rel, "symlink");
            else if (std::string(buf, static_cast<std::size_t>(n)) != e.symlink_target)
                add(Drift::Kind::modified, e.rel,
                    "points to " + std::string(buf, static_cast<std::size_t>(n)));
            return;
        }
        struct stat st {};
        if (::fstatat(root_.get(), e.rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            add(Drift::Kind::missing, e.rel, "");
            return;
        }
        // A directory where envbox wrote a file: pip's __pycache__ stand-in, replaced by the
        // folder Python then writes bytecode into.
        if (!S_ISREG(st.st_mode)) {
            add(Drift::Kind::modified, e.rel, "not a regular file");
            return;
        }
        if (((e.mode & 0100) != 0) != ((st.st_mode & 0100) != 0))
            add(Drift::Kind::modified, e.rel,
                (e.mode & 0100) ? "lost its exec bit" : "became executable");
        bool ok = false;
        std::string got = hash_at(root_.get(), e.rel.c_str(), ok);
        if (!ok)
            add(Drift::Kind::modified, e.rel, "unreadable");
        else if (got != to_hex(sha256(e.content)))
            add(Drift::Kind::modified, e.rel, "content differs");
    }

    // One planned file, `name` in the directory open as `dir` (-1 when it could not be opened).
    void check_file(const PlannedFile& f, int dir, const char* name) {
        struct stat st {};
        if (dir < 0 || ::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            add(Drift::Kind::missing, f.rel, "");
            return;
        }
        if (!S_ISREG(st.st_mode)) {
            add(Drift::Kind::modified, f.rel, "not a regular file");
            return;
        }
        if (f.executable != ((st.st_mode & 0100) != 0))
            add(Drift::Kind::modified, f.rel,
                f.executable ? "lost its exec bit" : "became executable");
        if (f.object) {
            check_linked_file(f, st);
            return;
        }
        bool ok = false;
        std::string got = hash_at(root_.get(), f.rel.c_str(), ok);
        ++hashed_;
        if (!ok || got != to_hex(sha256(f.content)))
            add(Drift::Kind::modified, f.rel, "content differs from what envbox wrote");
    }

    // A file placed from a store object; `st` is its stat. Same inode as its object: this stat
    // is the object's, mode, size and mtime included. An object as ingest left it has the
    // content verified then; one that was written through a link (root, --no-sandbox) or
    // chmod-ed is reported as the store's, since every environment linking it changed with it.
    void check_linked_file(const PlannedFile& f, const struct stat& st) {
        bool same_inode = false, object_present = true;
        const std::string object_rel =
            store_.object_relpath(f.object->digest, f.object->executable);
        if (!deep_) {
            auto it = object_inodes_.find(object_rel);
            object_present = it != object_inodes_.end();
            same_inode =
                object_present && it->second == st.st_ino && st.st_dev == objects_st_.st_dev;
        } else {
            struct stat ost {};
            object_present =
                ::fstatat(objects_, object_rel.c_str(), &ost, AT_SYMLINK_NOFOLLOW) == 0;
        }
        // An object deleted from the store (by hand, by a tool that does not know it) leaves
        // this link whole but the environment no longer reproducible from the store: drift,
        // which `create` repairs by ingesting the wheel again.
        if (!object_present)
            add(Drift::Kind::store_object_touched,
                store_.object_path(f.object->digest, f.object->executable).string(),
                "store object missing (deleted from the store); linked as " + f.rel,
                f.object->digest);
        auto touched = same_inode ? store::object_touched(st, f.object->size, f.object->executable)
                                  : std::nullopt;
        if (touched)
            add(Drift::Kind::store_object_touched,
                store_.object_path(f.object->digest, f.object->executable).string(),
                "store object " + *touched + "; linked as " + f.rel, f.object->digest);
        if (same_inode && !touched) return;
        if (static_cast<std::uint64_t>(st.st_size) != f.object->size) {
            add(Drift::Kind::modified, f.rel,
                "size " + std::to_string(st.st_size) + ", expected " +
                    std::to_string(f.object->size));
            return;
        }
        bool ok = false;
        std::string got = hash_at(root_.get(), f.rel.c_str(), ok);
        ++hashed_;
        if (!ok)
            add(Drift::Kind::modified, f.rel, "unreadable");
        else if (got != f.object->digest)
            add(Drift::Kind::modified, f.rel, "content differs from the lock");
    }

    // "installed by pip" from a foreign .dist-info's INSTALLER, or "unknown installer".
    std::string installer_of(const std::string& dist_info) const {
        try {
            std::string installer = read_file(layout_.root / dist_info / "INSTALLER");
            while (!installer.empty() && (installer.back() == '\n' || installer.back() == '\r'))
                installer.pop_back();
            return "installed by " + installer;
        } catch (const Error&) {
            return "unknown installer";
        }
    }

    const store::Store& store_;
    const VenvLayout& layout_;
    const InstallPlan& plan_;
    const bool deep_;
    UniqueFd root_;
    const int objects_;
    std::unordered_map<std::string, ino_t> object_inodes_;
    struct stat objects_st_ {};
    std::unordered_set<std::string> expected_;
    std::atomic<std::size_t> hashed_{0};
    std::mutex mutex_;
    VerifyReport report_;
};

}  // namespace

// shape: what the tree should be (store, layout, plan, skeleton), what it is, and how hard to
// look (deep, jobs); verify computes the first and walks the second concurrently.
VerifyReport verify_tree(const store::Store& store, const VenvLayout& layout,
                         const InstallPlan& plan, const std::vector<VenvEntry>& skeleton,
                         const std::vector<TreeEntry>& on_disk, bool deep, unsigned jobs) {
    TreeVerifier v(store, layout, plan, deep);
    v.check_skeleton(skeleton);
    v.check_planned_files(jobs);
    v.check_unplanned(on_disk);
    return v.take_report();
}

}  // namespace envbox::env
