// The apply half of the installer: a plan's directories, then its files placed in parallel
// (store objects through `LinkOps`, generated files written), counted in the report.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <set>

#include "envbox/env/installer.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::env {

namespace {

// Every path the installer writes stays inside the environment, whatever built the plan: the
// wheel's member paths and names were validated when they entered, and this last check costs
// one pass over strings.
void require_inside(std::string_view rel) {
    bool bad = rel.empty() || rel.front() == '/';
    for (std::string_view rest = rel; !bad && !rest.empty();) {
        auto slash = rest.find('/');
        std::string_view seg = rest.substr(0, slash);
        bad = seg.empty() || seg == "." || seg == "..";
        rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
        if (slash != std::string_view::npos && rest.empty()) bad = true;  // a trailing '/'
    }
    if (bad)
        throw Error(ErrorCode::integrity, "refusing to write '" + std::string(rel) +
                                              "': not a path inside the environment");
}

// Places a plan's files and counts how each was placed; `place_run` is called from several
// threads at once (the counters are atomic, the notes locked).
class Placer {
  public:
    Placer(const store::Store& store, const VenvLayout& layout, int root, LinkMode mode,
           const LinkOps& ops)
        : store_(store),
          layout_(layout),
          root_(root),
          mode_(mode),
          ops_(ops),
          objects_(store.objects_dir_fd()),
          // overlayfs copies an object of a lower layer (a container image's) up before linking
          // it: such a link is counted as the copy it was (see link_was_copied_up).
          overlay_(mode == LinkMode::hardlink && on_overlayfs(objects_)) {}

    /// Places `files[order[k]]` for k in [begin, end): sorted by path, so one directory stays
    /// open for each run of files in it.
    void place_run(const InstallPlan& plan, const std::vector<std::size_t>& order,
                   std::size_t begin, std::size_t end) {
        const std::vector<PlannedFile>& files = plan.files;
        UniqueFd dir;
        std::string dir_rel = "\x01";
        for (std::size_t k = begin; k < end; ++k) {
            const PlannedFile& p = files[order[k]];
            const std::string& r = p.rel;
            if (!p.object) {
                write_file_atomic(layout_.root / r, p.content, p.executable ? 0755 : 0644,
                                  Durability::none);
                bytes_ += p.content.size();
                continue;
            }
            auto slash = r.rfind('/');
            std::string parent = slash == std::string::npos ? std::string(".") : r.substr(0, slash);
            if (parent != dir_rel) {
                dir.reset(::openat(root_, parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
                if (!dir) throw sys_error("cannot open " + (layout_.root / parent).string(), errno);
                dir_rel = parent;
            }
            try {
                place_object(p, dir.get(),
                             slash == std::string::npos ? r.c_str() : r.c_str() + slash + 1);
            } catch (const Error& e) {
                // The wheels' own overlaps are settled by the plan; what is already there is
                // the environment's skeleton (python, pyvenv.cfg, activate, envbox's pip).
                if (e.sys_errno() != EEXIST) throw;
                throw Error(ErrorCode::conflict,
                            r + " is installed by " +
                                (p.wheel < plan.wheel_labels.size() ? plan.wheel_labels[p.wheel]
                                                                    : std::string("a wheel")) +
                                " and is a file of envbox's own in every environment (its "
                                "python, pyvenv.cfg, bin/activate or envbox's pip)");
            }
        }
    }

    /// The counts and notes of everything placed so far.
    InstallReport report(const InstallPlan& plan) const {
        InstallReport r;
        r.files = plan.files.size();
        r.hardlinked = hard_;
        r.reflinked = ref_;
        r.copied = copied_;
        r.generated = r.files - r.hardlinked - r.reflinked - r.copied;
        r.bytes = bytes_;
        for (const auto& f : plan.files)
            r.bytecode += f.bytecode;
        r.notes = plan.notes;
        r.notes.insert(r.notes.end(), notes_.begin(), notes_.end());
        r.dirs.assign(plan.dirs.begin(), plan.dirs.end());
        return r;
    }

  private:
    // Links (or clones, or copies) the object of `p` as `name` in the directory `dir`.
    void place_object(const PlannedFile& p, int dir, const char* name) {
        std::string src = store_.object_relpath(p.object->digest, p.object->executable);
        struct stat before {};
        const bool watch = overlay_ && ::fstatat(objects_, src.c_str(), &before, 0) == 0;
        LinkMode used = place_file_at(objects_, src.c_str(), dir, name, mode_,
                                      p.executable ? 0555 : 0444, ops_);
        bytes_ += p.object->size;
        if (watch && used == LinkMode::hardlink && link_was_copied_up(before, dir, name)) {
            ++copied_;
            note(
                "overlayfs copied store objects up from a lower layer before linking them "
                "(counted as copies)");
            return;
        }
        if (used == LinkMode::hardlink) {
            ++hard_;
            return;
        }
        (used == LinkMode::reflink ? ref_ : copied_)++;
        if (used != mode_)
            note(std::string(link_mode_name(mode_)) + " not possible for some files here; used " +
                 link_mode_name(used));
    }

    void note(std::string text) {
        std::lock_guard lock(note_mutex_);
        notes_.insert(std::move(text));
    }

    const store::Store& store_;
    const VenvLayout& layout_;
    const int root_;
    const LinkMode mode_;
    const LinkOps& ops_;
    const int objects_;
    const bool overlay_;
    std::atomic<std::size_t> hard_{0}, ref_{0}, copied_{0};
    std::atomic<std::uint64_t> bytes_{0};
    std::mutex note_mutex_;
    std::set<std::string> notes_;
};

// Creates `dirs` (relative to `root`, every parent among them or there already) one depth at
// a time, each depth's in parallel: a mkdir costs about four links (an inode and a directory
// block of its own), and made one after another the torch-shaped set's 21 935 directories were
// a sixth of its warm create (bench/README.md).
void make_dirs(int root, const fs::path& root_path, const std::set<std::string>& dirs,
               unsigned jobs) {
    std::vector<std::vector<const std::string*>> by_depth;
    for (const auto& d : dirs) {
        const auto depth = static_cast<std::size_t>(std::count(d.begin(), d.end(), '/'));
        if (by_depth.size() <= depth) by_depth.resize(depth + 1);
        by_depth[depth].push_back(&d);
    }
    constexpr std::size_t kChunk = 64;
    for (const auto& level : by_depth)
        parallel_for((level.size() + kChunk - 1) / kChunk, jobs, [&](std::size_t c) {
            const std::size_t end = std::min(level.size(), (c + 1) * kChunk);
            for (std::size_t k = c * kChunk; k < end; ++k)
                if (::mkdirat(root, level[k]->c_str(), 0755) != 0 && errno != EEXIST)
                    throw sys_error("cannot create " + (root_path / *level[k]).string(), errno);
        });
}

}  // namespace

InstallReport apply_install(const store::Store& store, const VenvLayout& layout,
                            const InstallPlan& plan, LinkMode mode, unsigned jobs,
                            const LinkOps& ops) {
    for (const auto& d : plan.dirs)
        require_inside(d);
    for (const auto& p : plan.files)
        require_inside(p.rel);
    UniqueFd root(::open(layout.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root) throw sys_error("cannot open " + layout.root.string(), errno);
    make_dirs(root.get(), layout.root, plan.dirs, jobs);

    // Place files in parallel, grouped by directory so each worker keeps one directory open.
    const auto& files = plan.files;
    std::vector<std::size_t> order(files.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t x, std::size_t y) { return files[x].rel < files[y].rel; });
    Placer placer(store, layout, root.get(), mode, ops);
    constexpr std::size_t kChunk = 256;
    parallel_for((order.size() + kChunk - 1) / kChunk, jobs, [&](std::size_t c) {
        const std::size_t end = std::min(order.size(), (c + 1) * kChunk);
        placer.place_run(plan, order, c * kChunk, end);
    });
    return placer.report(plan);
}

}  // namespace envbox::env
