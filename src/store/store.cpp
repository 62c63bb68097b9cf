#include "envbox/store/store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "envbox/pep/digest.hpp"
#include "envbox/pep/metadata.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/pep/wheel.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/zip.hpp"
#include "store/file_list.hpp"

namespace fs = std::filesystem;

namespace envbox::store {
namespace {

// Members up to this size are hashed in memory and written only when the object is new;
// larger ones stream to a staging file while they are hashed.
constexpr std::size_t kInMemoryLimit = 1 << 20;
// A streamed member's pages are handed to the disk every this many bytes.
constexpr std::uint64_t kWritebackChunk = 16 << 20;

// The dist-info texts read into memory (WHEEL, METADATA, RECORD: torch's RECORD is a few MB),
// refused beyond these sizes before a byte is decoded.
constexpr std::uint64_t kMaxWheelInfo = 1 << 20, kMaxMetadata = 16 << 20, kMaxRecord = 64 << 20;

std::uint64_t dist_info_text_limit(std::string_view leaf) {
    return leaf == "RECORD" ? kMaxRecord : leaf == "METADATA" ? kMaxMetadata : kMaxWheelInfo;
}

using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

[[noreturn]] void sys_fail(const std::string& what, const fs::path& path, int err) {
    throw Error(ErrorCode::generic, what + " " + path.string() + ": " + std::strerror(err));
}

void make_dir(const fs::path& p) {
    std::error_code ec;
    fs::create_directories(p, ec);
    if (ec)
        throw Error(ErrorCode::generic,
                    "cannot create directory " + p.string() + ": " + ec.message());
}

struct FdGuard {
    int fd = -1;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};

void write_or_fail(int fd, const void* data, std::size_t size, const fs::path& path) {
    if (!write_all_fd(fd, data, size)) sys_fail("cannot write", path, errno);
}

}  // namespace

IngestStats& IngestStats::operator+=(const IngestStats& o) {
    archive_bytes += o.archive_bytes;
    unpacked_bytes += o.unpacked_bytes;
    new_objects += o.new_objects;
    new_object_bytes += o.new_object_bytes;
    decode_s += o.decode_s;
    hash_s += o.hash_s;
    write_s += o.write_s;
    return *this;
}

std::uint64_t WheelFiles::total_size() const {
    std::uint64_t n = 0;
    for (const auto& f : files)
        n += f.size;
    return n;
}

const WheelFile* WheelFiles::find(std::string_view path) const {
    for (const auto& f : files)
        if (f.path == path) return &f;
    return nullptr;
}

Store::Store(fs::path home) : home_(std::move(home)) {
    const fs::path objects = root() / "objects" / "sha256";
    make_dir(objects);
    make_dir(root() / "wheels");
    make_dir(tmp_dir());
    // The 256 shard directories exist from the start, so ingest never has to create one.
    std::error_code ec;
    if (!fs::exists(objects / "ff", ec)) {
        static const char* hex = "0123456789abcdef";
        for (int i = 0; i < 256; ++i) {
            char shard[3] = {hex[i >> 4], hex[i & 15], 0};
            // 0777 less envbox's umask (ops::home_umask): 0775 in a group-shared home, where
            // every member adds objects.
            if (::mkdir((objects / shard).c_str(), 0777) != 0 && errno != EEXIST)
                sys_fail("cannot create", objects / shard, errno);
        }
    }
    objects_fd_ = ::open(objects.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (objects_fd_ < 0) sys_fail("cannot open", objects, errno);
}

Store::~Store() {
    if (objects_fd_ >= 0) ::close(objects_fd_);
}

fs::path Store::object_path(std::string_view digest, bool executable) const {
    return root() / "objects" / "sha256" / object_relpath(digest, executable);
}

std::string Store::object_relpath(std::string_view digest, bool executable) const {
    require_digest(digest, "object");
    std::string rel;
    rel.reserve(digest.size() + 4);
    rel.append(digest.substr(0, 2)).append("/").append(digest.substr(2));
    if (executable) rel += ".x";
    return rel;
}

std::optional<WheelFiles> Store::load_wheel(std::string_view wheel_sha256) const {
    require_digest(wheel_sha256, "wheel");
    fs::path p = root() / "wheels" / std::string(wheel_sha256) / "files";
    std::error_code ec;
    if (!fs::exists(p, ec)) return std::nullopt;
    auto w = parse_file_list(read_file(p), wheel_sha256);
    if (!w)
        throw Error(ErrorCode::integrity, "the store's file list " + p.string() +
                                              " is damaged; remove that directory and retry");
    return w;
}

static Error digest_mismatch(const std::string& filename, const fs::path& archive,
                             const std::string& expected, const std::string& actual) {
    return Error(ErrorCode::integrity, "hash mismatch for " + filename + " (" + archive.string() +
                                           "): expected sha256 " + expected + ", got " + actual +
                                           "; nothing was stored");
}

// When a wheel proves damaged, the better report is that the file is not the one the lock
// names: hashes it and throws that if so; returns when the digest matches.
static void blame_the_file_if_not_the_locked_one(const std::string& filename,
                                                 const fs::path& archive,
                                                 const std::string& expected) {
    std::string actual = to_hex(sha256_file(archive));
    if (actual != expected) throw digest_mismatch(filename, archive, expected, actual);
}

struct Ingest::Impl {
    const Store& store;
    fs::path archive;
    std::string wheel_sha256, filename;
    bool check_digest;
    pep::WheelFilename parsed_name;
    zip::File file;
    fs::path staging;
    int staging_fd = -1;

    // The wheel's regular files, in archive order, with their zip member index.
    std::vector<WheelFile> files;
    std::vector<std::size_t> member_of;
    std::vector<Sha256Digest> digests;
    std::vector<std::string> texts;  // RECORD, WHEEL and METADATA contents (others empty)
    std::set<std::string> seen;      // normalised member names

    struct Task {
        std::size_t begin = 0, end = 0;  // files [begin, end); begin == end: the archive digest
        std::uint64_t cost = 0;
    };
    std::vector<Task> tasks;
    std::string actual_digest;

    std::mutex mutex;                // guards what follows
    std::set<std::string> staged;    // object names staged in this ingest ("ab-cdef…")
    std::vector<std::string> moves;  // staged names, moved in by finish
    std::set<std::string> replace;   // digests to store again whatever is there
    IngestStats stats;

    Impl(const Store& s, const fs::path& a, const std::string& sha, const std::string& name,
         bool check, pep::WheelFilename parsed)
        : store(s),
          archive(a),
          wheel_sha256(sha),
          filename(name),
          check_digest(check),
          parsed_name(std::move(parsed)),
          file(a.string()) {}
    ~Impl() {
        if (staging_fd >= 0) ::close(staging_fd);
        if (!staging.empty()) {
            std::error_code ec;
            fs::remove_all(staging, ec);
        }
    }

    Error member_error(const std::string& what) const {
        return Error(ErrorCode::integrity, filename + ": " + what);
    }

    // Before any member is decoded: each member's size in the zip directory must be RECORD's,
    // so decoding (which stops at the first byte past the directory's size) never writes more
    // than RECORD lists. Reads RECORD alone (bounded by kMaxRecord); anything else wrong with
    // RECORD is left to `finish`, which reports it with the rest.
    void check_sizes_against_record() {
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
                               std::to_string(files[*record].size) +
                               " bytes; envbox reads at most " + std::to_string(kMaxRecord) +
                               " bytes of a wheel's RECORD");
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

    // Hashes file k's member and stages its object unless the store (or this ingest) has it.
    void ingest_file(std::size_t k, std::string& content) {
        static const struct timespec object_times[2] = {{kObjectMtime, 0}, {kObjectMtime, 0}};
        WheelFile& f = files[k];
        const bool keep_text = f.path.ends_with(".dist-info/RECORD") ||
                               f.path.ends_with(".dist-info/WHEEL") ||
                               f.path.ends_with(".dist-info/METADATA");
        if (keep_text) {
            const std::string_view leaf = std::string_view(f.path).substr(f.path.rfind('/') + 1);
            if (f.size > dist_info_text_limit(leaf))
                throw member_error("member '" + f.path + "' is " + std::to_string(f.size) +
                                   " bytes; envbox reads at most " +
                                   std::to_string(dist_info_text_limit(leaf)) +
                                   " bytes of a wheel's " + std::string(leaf));
        }
        // Objects are created read-only from the start (the descriptor stays writable), with
        // their fixed mtime set through the descriptor: no chmod or utimensat by path later.
        const mode_t mode = object_mode(f.executable);
        // In memory when small (or a dist-info file read below, bounded above: torch's RECORD
        // is megabytes), streamed to a staging file otherwise. Decoding stops at the first byte
        // past the size the central directory gives (zip::File::extract).
        const bool in_memory = keep_text || file.members()[member_of[k]].size <= kInMemoryLimit;
        const std::string stream_name = "stream-" + std::to_string(k);
        FdGuard out;
        if (!in_memory) {
            out.fd = ::openat(staging_fd, stream_name.c_str(),
                              O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
            if (out.fd < 0) sys_fail("cannot create", staging / stream_name, errno);
            // The umask must not leak into a store shared by several users.
            if (::fchmod(out.fd, mode) != 0)
                sys_fail("cannot set the mode of", staging / stream_name, errno);
        }
        content.clear();
        Sha256 hasher;
        std::uint64_t unflushed = 0;
        Clock::duration hashing{}, writing{};
        const auto started = Clock::now();
        try {
            file.extract(member_of[k], [&](const char* data, std::size_t n) {
                auto t0 = Clock::now();
                hasher.update(data, n);
                auto t1 = Clock::now();
                hashing += t1 - t0;
                if (out.fd < 0) {
                    content.append(data, n);
                    return;
                }
                write_or_fail(out.fd, data, n, staging / stream_name);
                // Publishing waits for the data to reach the disk: start writing big
                // members out while they are still being decoded.
                if ((unflushed += n) >= kWritebackChunk) {
                    start_writeback(out.fd);
                    unflushed = 0;
                }
                writing += Clock::now() - t1;
            });
        } catch (Error& e) {
            if (e.code() == ErrorCode::integrity) throw member_error(e.what());
            throw;
        }
        digests[k] = hasher.finish();
        f.digest = to_hex(digests[k]);
        const auto decoded = Clock::now();
        struct Account {  // adds this file's times to the ingest's on the way out
            Impl& im;
            Clock::time_point started, decoded;
            Clock::duration& hashing;
            Clock::duration& writing;
            ~Account() {
                auto total = Clock::now() - started;
                std::lock_guard lock(im.mutex);
                im.stats.decode_s += seconds(decoded - started - hashing - writing);
                im.stats.hash_s += seconds(hashing);
                im.stats.write_s += seconds(total - (decoded - started) + writing);
            }
        } account{*this, started, decoded, hashing, writing};
        if (keep_text) texts[k] = content;

        std::string rel = store.object_relpath(f.digest, f.executable);
        std::string staged_name = rel;
        staged_name[2] = '-';
        struct stat st {};
        // A touched object (written through an environment, chmod-ed, truncated by a crash)
        // is never reused: this ingest stages a fresh one, which replaces it.
        bool present = !replace.count(f.digest) &&
                       ::fstatat(store.objects_dir_fd(), rel.c_str(), &st, 0) == 0 &&
                       !object_touched(st, f.size, f.executable);
        bool mine = false;
        if (!present) {
            std::lock_guard lock(mutex);
            mine = staged.insert(staged_name).second;
        }
        if (!mine) {
            if (out.fd >= 0) {
                ::close(out.fd);
                out.fd = -1;
                ::unlinkat(staging_fd, stream_name.c_str(), 0);
            }
            return;
        }
        if (out.fd >= 0) {
            if (::futimens(out.fd, object_times) != 0)
                sys_fail("cannot set the mtime of", staging / stream_name, errno);
            start_writeback(out.fd);
            ::close(out.fd);
            out.fd = -1;
            if (::renameat(staging_fd, stream_name.c_str(), staging_fd, staged_name.c_str()) != 0)
                sys_fail("cannot stage", staging / staged_name, errno);
        } else {
            FdGuard sf{::openat(staging_fd, staged_name.c_str(),
                                O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)};
            if (sf.fd < 0) sys_fail("cannot create", staging / staged_name, errno);
            if (::fchmod(sf.fd, mode) != 0)
                sys_fail("cannot set the mode of", staging / staged_name, errno);
            write_or_fail(sf.fd, content.data(), content.size(), staging / staged_name);
            if (::futimens(sf.fd, object_times) != 0)
                sys_fail("cannot set the mtime of", staging / staged_name, errno);
            start_writeback(sf.fd);
        }
        std::lock_guard lock(mutex);
        moves.push_back(std::move(staged_name));
        stats.new_objects++;
        stats.new_object_bytes += f.size;
    }
};

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
    Impl& im = *impl_;

    // Every member checked before any work starts.
    const auto& members = im.file.members();
    for (std::size_t i = 0; i < members.size(); ++i) {
        const zip::Member& m = members[i];
        auto safe = pep::safe_member_path(m.name);
        if (!safe) throw im.member_error(safe.error().message());
        const std::uint32_t type = m.unix_mode() & S_IFMT;
        if (m.is_directory() || type == S_IFDIR) continue;
        if (type != 0 && type != S_IFREG)
            throw im.member_error("member '" + m.name + "' is " +
                                  (type == S_IFLNK ? std::string("a symbolic link")
                                                   : std::string("not a regular file")) +
                                  "; wheels may contain only regular files");
        if (!im.seen.insert(*safe).second)
            throw im.member_error("member '" + m.name + "' " +
                                  (m.name == *safe
                                       ? "appears twice in the archive"
                                       : "collides with another member named '" + *safe + "'"));
        WheelFile f;
        f.path = std::move(*safe);
        f.executable = (m.unix_mode() & 0111) != 0;
        f.size = m.size;
        im.files.push_back(std::move(f));
        im.member_of.push_back(i);
        im.stats.unpacked_bytes += m.size;
    }
    im.digests.resize(im.files.size());
    im.texts.resize(im.files.size());
    im.check_sizes_against_record();

    // Tasks: a member of 4 MiB or more alone, smaller ones in archive-order batches of about
    // that much work (each file also costs a few system calls, counted as 16 KiB).
    constexpr std::uint64_t kBatch = 4 << 20, kPerFile = 16 << 10;
    Impl::Task current;
    for (std::size_t k = 0; k < im.files.size(); ++k) {
        std::uint64_t cost = im.files[k].size + kPerFile;
        if (cost >= kBatch) {
            im.tasks.push_back({k, k + 1, cost});
            continue;
        }
        if (current.end != k || current.cost + cost > kBatch) {
            if (current.end > current.begin) im.tasks.push_back(current);
            current = {k, k, 0};
        }
        current.end = k + 1;
        current.cost += cost;
    }
    if (current.end > current.begin) im.tasks.push_back(current);
    if (check_digest) im.tasks.push_back({0, 0, im.file.size() / 2});

    static std::atomic<unsigned> counter{0};
    im.staging = store.tmp_dir() / ("ingest-" + wheel_sha256.substr(0, 16) + "-" +
                                    std::to_string(::getpid()) + "-" + std::to_string(counter++));
    make_dir(im.staging);
    im.staging_fd = ::open(im.staging.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (im.staging_fd < 0) sys_fail("cannot open", im.staging, errno);
}

Ingest::~Ingest() = default;

std::size_t Ingest::task_count() const {
    return impl_->tasks.size();
}

std::uint64_t Ingest::task_cost(std::size_t t) const {
    return impl_->tasks.at(t).cost;
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

WheelFiles Ingest::finish(IngestStats* stats) {
    Impl& im = *impl_;
    const std::string& filename = im.filename;
    if (im.check_digest && im.actual_digest != im.wheel_sha256)
        throw digest_mismatch(filename, im.archive, im.wheel_sha256, im.actual_digest);
    WheelFiles w;
    w.wheel_sha256 = im.wheel_sha256;
    w.filename = filename;

    // Exactly one .dist-info directory, named for this wheel.
    std::set<std::string> dist_infos;
    for (const auto& f : im.files) {
        auto slash = f.path.find('/');
        if (slash != std::string::npos && f.path.substr(0, slash).ends_with(".dist-info"))
            dist_infos.insert(f.path.substr(0, slash));
    }
    for (const auto& d : dist_infos) {
        auto dash = d.rfind('-', d.size() - 10);
        std::string dname = d.substr(0, dash == std::string::npos ? 0 : dash);
        if (dash != std::string::npos &&
            pep::canonicalize_name(dname) == im.parsed_name.canonical_name)
            w.dist_info = d;
    }
    if (dist_infos.size() != 1 || w.dist_info.empty())
        throw im.member_error(
            "expected exactly one .dist-info directory for '" + im.parsed_name.name + "', found " +
            (dist_infos.empty()
                 ? std::string("none")
                 : *dist_infos.begin() + (dist_infos.size() > 1 ? " and others" : "")));

    // WHEEL and METADATA.
    auto text_of = [&](const std::string& leaf) -> const std::string* {
        const std::string path = w.dist_info + "/" + leaf;
        for (std::size_t k = 0; k < im.files.size(); ++k)
            if (im.files[k].path == path) return &im.texts[k];
        return nullptr;
    };
    const std::string* wheel_text = text_of("WHEEL");
    if (!wheel_text) throw im.member_error("no " + w.dist_info + "/WHEEL");
    auto info = pep::parse_wheel_info(*wheel_text);
    if (!info) throw im.member_error(info.error().message());
    w.root_is_purelib = info->root_is_purelib;
    const std::string* metadata = text_of("METADATA");
    if (!metadata) throw im.member_error("no " + w.dist_info + "/METADATA");
    for (const auto& [k, v] : pep::parse_headers(*metadata)) {
        std::string key = pep::ascii_lower(k);
        if (key == "name" && w.name.empty()) w.name = v;
        if (key == "version" && w.version.empty()) w.version = v;
    }
    if (w.name.empty() || w.version.empty())
        throw im.member_error("METADATA lacks Name or Version");
    check_identity(im, w);

    // RECORD: every member listed with a matching sha256 and size, nothing listed that is missing.
    const std::string record_path = w.dist_info + "/RECORD";
    const std::string* record_text = text_of("RECORD");
    if (!record_text) throw im.member_error("no " + record_path);
    auto rows = pep::parse_record(*record_text);
    if (!rows) throw im.member_error(rows.error().message());
    std::unordered_map<std::string, const pep::RecordRow*> by_path;
    by_path.reserve(rows->size());
    for (const auto& row : *rows) {
        auto norm = pep::safe_member_path(row.path);
        if (!norm) throw im.member_error("RECORD: " + norm.error().message());
        by_path[*norm] = &row;
    }
    auto is_signature = [&](const std::string& p) {
        return p == record_path || p == record_path + ".jws" || p == record_path + ".p7s";
    };
    for (std::size_t k = 0; k < im.files.size(); ++k) {
        const WheelFile& f = im.files[k];
        auto it = by_path.find(f.path);
        if (is_signature(f.path)) {
            if (f.path != record_path && it != by_path.end())
                throw im.member_error(f.path + " must not be listed in RECORD");
            continue;
        }
        if (it == by_path.end()) {
            if (pep::in_pycache(f.path)) continue;
            throw im.member_error("member '" + f.path + "' is not listed in RECORD");
        }
        const pep::RecordRow& row = *it->second;
        if (row.hash.empty()) {
            if (pep::in_pycache(f.path)) continue;
            throw im.member_error("RECORD lists '" + f.path + "' without a hash");
        }
        if (auto problem = pep::check_record_row(row, im.digests[k], f.size))
            throw im.member_error(*problem);
    }
    std::vector<std::string> listed_missing;
    for (const auto& [p, row] : by_path)
        if (!im.seen.count(p) && !p.ends_with("/")) listed_missing.push_back(p);
    if (!listed_missing.empty()) {
        std::sort(listed_missing.begin(), listed_missing.end());
        throw im.member_error("RECORD lists '" + listed_missing.front() +
                              "', which is not in the archive");
    }

    // Verified: move new objects into place, never replacing an existing one.
    const int objects_fd = im.store.objects_dir_fd();
    for (const std::string& name : im.moves) {
        std::string rel = name;
        rel[2] = '/';
        // Atomic where renameat2 is not (NFS, FUSE, 9p): a link that fails with EEXIST.
        int err = rename_noreplace_at(im.staging_fd, name.c_str(), objects_fd, rel.c_str());
        if (err == 0) continue;
        if (err == EEXIST) {
            // Another ingest stored it first, or a crash left a damaged copy, or a write
            // through an environment touched it: keep an untouched copy, replace any other.
            // Environments that link the replaced inode keep it; their verify reports it.
            struct stat theirs {
            }, mine{};
            if (!im.replace.count(rel.substr(0, 2) + rel.substr(3, 62)) &&
                ::fstatat(objects_fd, rel.c_str(), &theirs, 0) == 0 &&
                ::fstatat(im.staging_fd, name.c_str(), &mine, 0) == 0 &&
                !object_touched(theirs, static_cast<std::uint64_t>(mine.st_size),
                                name.ends_with(".x")))
                continue;
            if (::renameat(im.staging_fd, name.c_str(), objects_fd, rel.c_str()) == 0) continue;
            err = errno;
        }
        sys_fail("cannot store object", im.store.root() / "objects" / "sha256" / rel, err);
    }
    w.files = std::move(im.files);
    im.stats.archive_bytes = im.file.size();
    if (stats) *stats = im.stats;
    return w;
}

std::optional<std::string> read_dist_info_file(const fs::path& wheel, std::string_view leaf) {
    try {
        zip::File file(wheel.string());
        auto i = zip::find_dist_info(file.members(), leaf);
        if (!i) return std::nullopt;
        const zip::Member& m = file.members()[*i];
        if (m.size > dist_info_text_limit(leaf))
            throw Error(ErrorCode::integrity, wheel.string() + ": member '" + m.name + "' is " +
                                                  std::to_string(m.size) +
                                                  " bytes; envbox reads at most " +
                                                  std::to_string(dist_info_text_limit(leaf)) +
                                                  " bytes of a wheel's " + std::string(leaf));
        return file.read(*i);
    } catch (Error& e) {
        if (e.code() == ErrorCode::integrity)
            throw Error(ErrorCode::integrity,
                        wheel.string() + " is not a readable wheel: " + e.what());
        throw;
    }
}

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
        if (::fstatat(objects_fd_, rel.c_str(), &st, 0) != 0) {
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

void Ingest::replace_objects(std::set<std::string> digests) {
    impl_->replace = std::move(digests);
}

void Store::publish(const std::vector<const WheelFiles*>& wheels) const {
    if (wheels.empty()) return;
    sync_filesystem(root());
    for (const WheelFiles* w : wheels) {
        fs::path dir = root() / "wheels" / w->wheel_sha256;
        make_dir(dir);
        write_file_atomic(dir / "files", serialise_file_list(*w), 0444, Durability::none);
    }
}

}  // namespace envbox::store
