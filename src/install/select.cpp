// The selection of what an environment installs: one wheel per package of the lock, for the
// target (contracts in install/item.hpp).

#include "envbox/install/item.hpp"
#include "envbox/util/error.hpp"

namespace fs = std::filesystem;

namespace envbox::install {

namespace {

const char* non_wheel_kind(lock::Selection::Kind kind) {
    using Kind = lock::Selection::Kind;
    return kind == Kind::sdist       ? "only an sdist"
           : kind == Kind::directory ? "a local directory"
           : kind == Kind::vcs       ? "a VCS checkout"
                                     : "a non-wheel archive";
}

}  // namespace

std::vector<Item> select_items(const lock::Pylock& pylock, const install::Target& target,
                               const fs::path& lock_path, const std::set<std::string>& buildable) {
    lock::SelectTarget select_target;
    select_target.environment = target.markers;
    select_target.tags = &target.tags;
    auto selected = lock::select(pylock, select_target);
    if (!selected) {
        Error e = selected.error();
        std::string covered;  // the targets the lock is for, when it names them
        if (pylock.environments)
            for (const auto& m : *pylock.environments)
                covered += (covered.empty() ? "; the lock is for " : ", ") + m.str();
        e.add_context("selecting packages from " + lock_path.string() + " for CPython " +
                      target.python_full_version + " on " + target.platform + covered);
        throw e;
    }
    const std::string python_xy =
        std::to_string(target.python_major) + "." + std::to_string(target.python_minor);
    std::vector<Item> items;
    for (const auto& sel : *selected) {
        Item item;
        item.package = sel.package;
        const std::string label =
            sel.package->name + (sel.package->version ? " " + sel.package->version->str() : "");
        const std::string where = lock_path.string() + ":";
        item.file = sel.file;
        item.direct = sel.kind == lock::Selection::Kind::archive;
        item.sdist = sel.kind == lock::Selection::Kind::sdist && buildable.count(sel.package->name);
        item.local = (sel.kind == lock::Selection::Kind::directory ||
                      sel.kind == lock::Selection::Kind::vcs) &&
                     buildable.count(sel.package->name);
        if (item.local) {  // built by create: its tree's digest and its wheel come then
            item.editable = sel.package->directory && sel.package->directory->editable;
            items.push_back(std::move(item));
            continue;
        }
        if (sel.kind != lock::Selection::Kind::wheel && !item.sdist &&
            !(item.direct && sel.file && sel.file->filename().ends_with(".whl")))
            throw Error(ErrorCode::invalid_input,
                        where + std::to_string(sel.package->line) + ": " + label + " offers " +
                            non_wheel_kind(sel.kind) + " for CPython " + python_xy + " on " +
                            target.platform + "; envbox installs wheels only" +
                            (sel.kind == lock::Selection::Kind::sdist ||
                                     sel.kind == lock::Selection::Kind::directory ||
                                     sel.kind == lock::Selection::Kind::vcs
                                 ? ", and builds an sdist or a folder only where the lock names "
                                   "its build environment ([tool.envbox] builds)"
                                 : ""));
        auto sha = item.file->sha256();
        if (!sha)
            throw Error(ErrorCode::invalid_input, where + std::to_string(item.file->line) + ": " +
                                                      label + " has no sha256 hash");
        item.sha256 = *sha;
        item.filename = item.file->filename();
        items.push_back(std::move(item));
    }
    return items;
}

std::vector<env::CudaLine> items_cuda_lines(const std::vector<Item>& items) {
    std::vector<env::CudaLine> lines;
    for (const auto& item : items)
        if (item.package->version)
            if (auto l = env::cuda_line_of(item.package->name, *item.package->version))
                lines.push_back(*l);
    return lines;
}

}  // namespace envbox::install
