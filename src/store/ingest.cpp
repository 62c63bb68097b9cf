// Ingest, before and around the tasks: the archive checked, its directory read and every
// member refused or listed, the work split into tasks, the tasks run (ingest_impl.hpp).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <mutex>
#include <unordered_map>

#include "envbox/pep/digest.hpp"
#include "envbox/pep/wheel.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/unique_fd.hpp"
#include "store/file_list.hpp"
#include "store/ingest_impl.hpp"
#include "store/sys.hpp"

namespace fs = std::filesystem;

namespace envbox::store {

Error digest_mismatch(const std::string& filename, const fs::path& archive,
                      const std::string& expected, const std::string& actual) {
    return Error(ErrorCode::integrity, "hash mismatch for " + filename + " (" + archive.string() +
                                           "): expected sha256 " + expected + ", got " + actual +
                                           "; nothing was stored");
}

void blame_the_file_if_not_the_locked_one(const std::string& filename, const fs::path& archive,
                                          const std::string& expected) {
    std::string actual = to_hex(sha256_file(archive));
    if (actual != expected) throw digest_mismatch(filename, archive, expected, actual);
}

Ingest::Impl::Impl(const Store& s, const fs::path& a, const std::string& sha,
                   const std::string& name, bool check, pep::WheelFilename parsed)
    : store(s),
      archive(a),
      wheel_sha256(sha),
      filename(name),
      check_digest(check),
      parsed_name(std::move(parsed)),
      file(a.string()) {}

Ingest::Impl::~Impl() {
    staging_fd.reset();
    if (!staging.empty()) {
        std::error_code ec;
        fs::remove_all(staging, ec);
    }
}

void Ingest::Impl::read_members() {
    const auto& members = file.members();
    for (std::size_t i = 0; i < members.size(); ++i) {
        const zip::Member& m = members[i];
        auto safe = pep::safe_member_path(m.name);
        if (!safe) throw member_error(safe.error().message());
        const std::uint32_t type = m.unix_mode() & S_IFMT;
        if (m.is_directory() || type == S_IFDIR) continue;
        if (type != 0 && type != S_IFREG)
            throw member_error("member '" + m.name + "' is " +
                               (type == S_IFLNK ? std::string("a symbolic link")
                                                : std::string("not a regular file")) +
                               "; wheels may contain only regular files");
        if (!seen.insert(*safe).second)
            throw member_error("member '" + m.name + "' " +
                               (m.name == *safe
                                    ? "appears twice in the archive"
                                    : "collides with another member named '" + *safe + "'"));
        WheelFile f;
        f.path = std::move(*safe);
        f.executable = (m.unix_mode() & 0111) != 0;
        f.size = m.size;
        files.push_back(std::move(f));
        member_of.push_back(i);
        stats.unpacked_bytes += m.size;
    }
    digests.resize(files.size());
    texts.resize(files.size());
    whole.assign(files.size(), Whole::not_yet);
}

// Decoding stops at the first byte past the directory's size, so it never writes more than
// RECORD lists. Reads RECORD alone (bounded by kMaxRecord); anything else wrong with RECORD is
// left to `finish`, which reports it with the rest.
void Ingest::Impl::check_sizes_against_record() {
    std::optional<std::size_t> record;
    for (std::size_t k = 0; k < files.size(); ++k) {
        const std::string& p = files[k].path;
        if (p.ends_with(".dist-info/RECORD") && p.find('/') == p.size() - 7) {
            if (record) return;  // several .dist-info directories: finish refuses the wheel
            record = k;
        }
    }
    if (!record) return;
    if (files[*record].size > kMaxRecord)
        throw member_error("member '" + files[*record].path + "' is " +
                           std::to_string(files[*record].size) + " bytes; envbox reads at most " +
                           std::to_string(kMaxRecord) + " bytes of a wheel's RECORD");
    std::string text;
    try {
        text = file.read(member_of[*record]);
    } catch (Error& e) {
        if (e.code() == ErrorCode::integrity) throw member_error(e.what());
        throw;
    }
    auto rows = pep::parse_record(text);
    if (!rows) return;
    std::unordered_map<std::string, const pep::RecordRow*> by_path;
    by_path.reserve(rows->size());
    for (const auto& row : *rows)
        if (!row.size.empty())
            if (auto norm = pep::safe_member_path(row.path))
                by_path.emplace(std::move(*norm), &row);
    for (const WheelFile& f : files)
        if (auto it = by_path.find(f.path);
            it != by_path.end() && it->second->size != std::to_string(f.size))
            throw member_error("size mismatch for '" + it->second->path + "': RECORD says " +
                               it->second->size + " bytes, the zip directory " +
                               std::to_string(f.size) + "; nothing was decoded");
}

// A member of 4 MiB or more alone, smaller ones in archive-order batches of about that much
// work (each file also costs a few system calls, counted as 16 KiB); the archive's digest, when
// asked, is one more task.
void Ingest::Impl::plan_tasks() {
    constexpr std::uint64_t kBatch = 4 << 20, kPerFile = 16 << 10;
    Task current;
    for (std::size_t k = 0; k < files.size(); ++k) {
        std::uint64_t cost = files[k].size + kPerFile;
        if (cost >= kBatch) {
            tasks.push_back({k, k + 1, cost});
            continue;
        }
        if (current.end != k || current.cost + cost > kBatch) {
            if (current.end > current.begin) tasks.push_back(current);
            current = {k, k, 0};
        }
        current.end = k + 1;
        current.cost += cost;
    }
    if (current.end > current.begin) tasks.push_back(current);
    if (check_digest) tasks.push_back({0, 0, file.size() / 2});
}

namespace {

// Staging folders an ingest left when its process was killed: each live one is held with a
// shared flock on its folder for the ingest's lifetime, so one whose lock can be taken
// exclusively belongs to no running envbox (on this machine or another sharing the home) and
// is removed, never through a link. Once per process, before its first ingest stages anything.
void remove_abandoned_staging(const fs::path& tmp) {
    UniqueFd dir(::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return;
    std::vector<OwnEntry> entries;
    try {
        entries = list_own_dir(dir.get(), tmp);
    } catch (const Error&) {
        return;
    }
    for (const auto& e : entries) {
        if (e.type != OwnEntry::Type::folder || !e.name.starts_with("ingest-")) continue;
        UniqueFd held(
            ::openat(dir.get(), e.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        struct stat st {};
        // A folder made in the last minute may be one whose ingest has not locked it yet.
        if (!held || ::fstat(held.get(), &st) != 0 || st.st_mtime > ::time(nullptr) - 60 ||
            ::flock(held.get(), LOCK_EX | LOCK_NB) != 0)
            continue;  // in use
        try {
            remove_own_tree(tmp, tmp / e.name);
        } catch (const Error&) {  // gc removes what is left
        }
    }
}

}  // namespace

void Ingest::Impl::open_staging() {
    static std::atomic<unsigned> counter{0};
    static std::once_flag swept;
    std::call_once(swept, [&] { remove_abandoned_staging(store.tmp_dir()); });
    staging = store.tmp_dir() / ("ingest-" + wheel_sha256.substr(0, 16) + "-" +
                                 std::to_string(::getpid()) + "-" + std::to_string(counter++));
    make_dir(staging);
    staging_fd.reset(::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!staging_fd) sys_fail("cannot open", staging, errno);
    (void)::flock(staging_fd.get(), LOCK_SH);  // in use while this ingest lives
}

// The archive must be a regular file of the lock's size: a lock's `path` may name anything
// (/dev/zero, a FIFO, a file that changed since it was locked), and only a regular file is
// opened, so nothing blocks or reads without end.
static void check_archive(const fs::path& archive, const std::string& filename,
                          std::optional<std::uint64_t> expected_size) {
    struct stat st {};
    if (::stat(archive.c_str(), &st) != 0)
        sys_fail("cannot read " + filename + ":", archive, errno);
    if (!S_ISREG(st.st_mode))
        throw Error(ErrorCode::integrity, filename + " (" + archive.string() +
                                              ") is not a regular file; nothing was stored");
    if (expected_size && static_cast<std::uint64_t>(st.st_size) != *expected_size)
        throw Error(ErrorCode::integrity, "size mismatch for " + filename + " (" +
                                              archive.string() + "): the lock says " +
                                              std::to_string(*expected_size) +
                                              " bytes, the file has " + std::to_string(st.st_size) +
                                              "; nothing was stored");
}

Ingest::Ingest(const Store& store, const fs::path& archive, const std::string& wheel_sha256,
               const std::string& filename, bool check_digest,
               std::optional<std::uint64_t> expected_size) {
    // The digest names the staging directory and the file list: checked before any path is built.
    require_digest(wheel_sha256, filename + ": wheel");
    auto parsed_name = pep::WheelFilename::parse(filename);
    if (!parsed_name) throw Error(ErrorCode::invalid_input, parsed_name.error().message());
    check_archive(archive, filename, expected_size);
    try {
        impl_ = std::make_unique<Impl>(store, archive, wheel_sha256, filename, check_digest,
                                       std::move(*parsed_name));
    } catch (Error& e) {
        if (e.code() != ErrorCode::integrity) throw;
        // Not a zip: when it is not even the file the lock names (an error page saved by a
        // proxy, a truncated copy), that is what to say.
        if (check_digest) blame_the_file_if_not_the_locked_one(filename, archive, wheel_sha256);
        throw Error(ErrorCode::integrity, filename + ": not a readable wheel: " + e.what());
    }
    // Every member checked before any work starts.
    impl_->read_members();
    impl_->check_sizes_against_record();
    impl_->plan_tasks();
    impl_->open_staging();
}

Ingest::~Ingest() = default;

std::size_t Ingest::task_count() const {
    return impl_->tasks.size();
}

std::uint64_t Ingest::task_cost(std::size_t t) const {
    return impl_->tasks.at(t).cost;
}

std::span<const WheelFile> Ingest::task_files(std::size_t t) const {
    const Impl::Task& task = impl_->tasks.at(t);
    return std::span<const WheelFile>(impl_->files).subspan(task.begin, task.end - task.begin);
}

std::size_t Ingest::file_count() const {
    return impl_->files.size();
}

std::vector<IngestedMember> Ingest::ingested_members(std::size_t t) const {
    const Impl& im = *impl_;
    const Impl::Task& task = im.tasks.at(t);
    std::vector<IngestedMember> out;
    for (std::size_t k = task.begin; k < task.end; ++k) {
        if (im.whole[k] == Impl::Whole::not_yet) continue;
        IngestedMember m{k, im.files[k], {}};
        if (im.whole[k] == Impl::Whole::staged_here) {
            std::string name = im.store.object_relpath(m.file.digest, m.file.executable);
            name[2] = '-';
            m.staged = im.staging / name;
        }
        out.push_back(std::move(m));
    }
    return out;
}

void Ingest::replace_objects(std::set<std::string> digests) {
    impl_->replace = std::move(digests);
}

void Ingest::run_task(std::size_t t) {
    Impl& im = *impl_;
    const Impl::Task& task = im.tasks.at(t);
    if (task.begin == task.end) {
        try {
            const auto started = Clock::now();
            im.actual_digest = to_hex(sha256_file(im.archive));
            std::lock_guard lock(im.mutex);
            im.stats.hash_s += seconds(Clock::now() - started);
        } catch (Error& e) {
            e.add_context("reading " + im.filename);
            throw;
        }
        return;
    }
    std::string content;
    try {
        for (std::size_t k = task.begin; k < task.end; ++k)
            im.ingest_file(k, content);
    } catch (Error& e) {
        // A damaged member of a file that is not the one the lock names: say that instead.
        if (e.code() != ErrorCode::integrity || !im.check_digest) throw;
        blame_the_file_if_not_the_locked_one(im.filename, im.archive, im.wheel_sha256);
        throw;
    }
}

std::optional<std::string> read_dist_info_file(const fs::path& wheel, std::string_view leaf,
                                               std::string_view shown) {
    const std::string name = shown.empty() ? wheel.string() : std::string(shown);
    try {
        zip::File file(wheel.string());
        auto i = zip::find_dist_info(file.members(), leaf);
        if (!i) return std::nullopt;
        const zip::Member& m = file.members()[*i];
        if (m.size > dist_info_text_limit(leaf))
            throw Error(ErrorCode::integrity, name + ": member '" + m.name + "' is " +
                                                  std::to_string(m.size) +
                                                  " bytes; envbox reads at most " +
                                                  std::to_string(dist_info_text_limit(leaf)) +
                                                  " bytes of a wheel's " + std::string(leaf));
        return file.read(*i);
    } catch (Error& e) {
        if (e.code() == ErrorCode::integrity)
            throw Error(ErrorCode::integrity, name + " is not a readable wheel: " + e.what());
        throw;
    }
}

}  // namespace envbox::store
