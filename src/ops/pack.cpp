// `envbox pack ENV -o FILE` and `envbox unpack FILE [ENV]`: an environment as one tar (zstd or
// not) for machines with no network, read back with every member checked before it is used
// (contracts in include/envbox/ops/fleet.hpp).

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>

#include "envbox/index/fetch.hpp"
#include "envbox/index/http.hpp"
#include "envbox/ops/fleet.hpp"
#include "envbox/pep/digest.hpp"
#include "envbox/store/home.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/stopwatch.hpp"
#include "envbox/util/unique_fd.hpp"
#include "fleet_steps.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

constexpr const char* kLockMember = "pylock.toml";
constexpr const char* kWheelDir = "wheels/";
// Wheels built from the lock's sdists, one line each, between the lock and the wheels.
constexpr const char* kBuildsMember = "builds";
constexpr std::string_view kBuildsHeader = "envbox-pack-builds 1";
constexpr std::uint64_t kMaxBuildsBytes = 1ull << 20;
constexpr std::uint64_t kMaxLockBytes = 64ull << 20;
constexpr std::size_t kBlock = 1 << 20;

// libarchive handles, freed on every path.
struct Writer {
    archive* a = archive_write_new();
    ~Writer() { archive_write_free(a); }
};
struct Reader {
    archive* a = archive_read_new();
    ~Reader() { archive_read_free(a); }
};

Error archive_error(archive* a, const std::string& what) {
    const char* msg = archive_error_string(a);
    return Error(ErrorCode::generic, what + ": " + (msg ? msg : "libarchive failed"));
}

// One member: a regular file, 0644, mtime 1980-01-01 (the store's), so a pack of the same
// generation is the same bytes.
void add_member(archive* a, const std::string& name, std::uint64_t size,
                const std::function<void(archive*)>& write, const fs::path& out) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(size));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_mtime(e, 315532800, 0);
    int rc = archive_write_header(a, e);
    archive_entry_free(e);
    if (rc != ARCHIVE_OK) throw archive_error(a, "cannot write " + name + " into " + out.string());
    write(a);
}

void write_data(archive* a, const char* data, std::size_t n, const std::string& what) {
    if (archive_write_data(a, data, n) != static_cast<la_ssize_t>(n))
        throw archive_error(a, "cannot write " + what);
}

bool zstd_by_name(const fs::path& p) {
    const std::string n = p.filename().string();
    return n.ends_with(".zst") || n.ends_with(".tzst") || n.ends_with(".zstd");
}

// The builds member: "build SDIST_SHA256 WHEEL_SHA256 SIZE FILENAME KEY" (the key's text
// percent-encoded) per wheel built here; empty when none is.
std::string builds_member(const fleet::Bundle& b) {
    kv::Writer w(kBuildsHeader);
    bool any = false;
    for (const auto& wheel : b.wheels) {
        if (wheel.built_from.empty()) continue;
        any = true;
        w.add_fields("build", {wheel.built_from, wheel.sha256, std::to_string(wheel.size),
                               wheel.filename, kv::percent_encode(wheel.build_key)});
    }
    return any ? std::move(w).take() : std::string();
}

}  // namespace

PackResult pack(const Context& ctx, const PackOptions& opt) {
    const Stopwatch start;
    if (opt.output.empty()) throw Error(ErrorCode::usage, "pack needs -o FILE");
    fleet::Bundle bundle = fleet::current_bundle(ctx, opt.env);
    ctx.progress->phase("Reading wheels", 0);
    fleet::locate_wheels(ctx, bundle, ctx.jobs);
    PackResult result;
    result.output = fs::absolute(opt.output);
    const bool zstd = opt.zstd.value_or(zstd_by_name(opt.output));
    fs::path tmp = result.output;
    tmp += ".tmp-" + std::to_string(::getpid());
    ScopedRemove remove(tmp);
    {
        Writer w;
        if (archive_write_set_format_pax_restricted(w.a) != ARCHIVE_OK ||
            (zstd && archive_write_add_filter_zstd(w.a) != ARCHIVE_OK))
            throw archive_error(w.a, "cannot write " + result.output.string());
        if (archive_write_open_filename(w.a, tmp.c_str()) != ARCHIVE_OK)
            throw archive_error(w.a, "cannot create " + tmp.string());
        ctx.progress->phase("Packing", bundle.wheels.size() + 1);
        add_member(
            w.a, kLockMember, bundle.lock_text.size(),
            [&](archive* a) {
                write_data(a, bundle.lock_text.data(), bundle.lock_text.size(), kLockMember);
            },
            result.output);
        if (const std::string builds = builds_member(bundle); !builds.empty())
            add_member(
                w.a, kBuildsMember, builds.size(),
                [&](archive* a) { write_data(a, builds.data(), builds.size(), kBuildsMember); },
                result.output);
        std::set<std::string> seen;
        std::string buf(kBlock, '\0');
        for (const auto& wheel : bundle.wheels) {
            if (!seen.insert(wheel.filename).second) continue;
            if (wheel.refetched) result.refetched++;
            add_member(
                w.a, kWheelDir + wheel.filename, wheel.size,
                [&](archive* a) {
                    UniqueFd fd(::open(wheel.path.c_str(), O_RDONLY | O_CLOEXEC));
                    if (!fd)
                        throw Error(ErrorCode::generic, "cannot read " + wheel.path.string() +
                                                            ": " + std::strerror(errno));
                    std::uint64_t left = wheel.size;
                    while (left > 0) {
                        ssize_t n =
                            ::read(fd.get(), buf.data(), std::min<std::uint64_t>(kBlock, left));
                        if (n <= 0)
                            throw Error(
                                ErrorCode::generic,
                                "cannot read " + wheel.path.string() + ": " +
                                    (n < 0 ? std::strerror(errno) : "shorter than its size"));
                        write_data(a, buf.data(), static_cast<std::size_t>(n), wheel.filename);
                        left -= static_cast<std::uint64_t>(n);
                    }
                },
                result.output);
            ctx.progress->advance(1);
        }
        result.wheels = seen.size();
        if (archive_write_close(w.a) != ARCHIVE_OK)
            throw archive_error(w.a, "cannot finish " + tmp.string());
    }
    std::error_code ec;
    fs::rename(tmp, result.output, ec);
    if (ec)
        throw Error(ErrorCode::generic, "cannot move " + tmp.string() + " to " +
                                            result.output.string() + ": " + ec.message());
    remove.release();
    result.bytes = fs::file_size(result.output, ec);
    result.seconds = start.total();
    return result;
}

namespace {

// A member name pack writes: relative, no `.` or `..` component, no empty one.
bool safe_name(const std::string& name) {
    if (name.empty() || name.front() == '/' || name.find('\\') != std::string::npos) return false;
    std::size_t start = 0;
    while (start <= name.size()) {
        auto end = name.find('/', start);
        if (end == std::string::npos) end = name.size();
        std::string_view c(name.data() + start, end - start);
        if (c.empty() || c == "." || c == "..") return false;
        start = end + 1;
    }
    return true;
}

// The member's data into memory, no more than `limit`.
std::string read_member(archive* a, std::uint64_t limit, const std::string& what) {
    std::string out, buf(kBlock, '\0');
    for (;;) {
        la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
        if (n < 0) throw archive_error(a, "cannot read " + what);
        if (n == 0) return out;
        if (out.size() + static_cast<std::uint64_t>(n) > limit)
            throw Error(ErrorCode::integrity,
                        what + " is larger than " + std::to_string(limit) + " bytes");
        out.append(buf.data(), static_cast<std::size_t>(n));
    }
}

// The member's data into `dest` (a temporary name beside it, renamed once its sha256 is
// `sha256` and its size `size`); anything else is refused and nothing is left.
void extract_wheel(archive* a, const fs::path& dest, const std::string& sha256, std::uint64_t size,
                   const std::string& what) {
    fs::path tmp = dest;
    tmp += ".unpack-" + std::to_string(::getpid());
    ScopedRemove remove(tmp);
    // A name left by an earlier run (or planted as a link) is removed itself, never written
    // through: the file is always new.
    ::unlink(tmp.c_str());
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd)
        throw Error(ErrorCode::generic,
                    "cannot create " + tmp.string() + ": " + std::strerror(errno));
    Sha256 hash;
    std::uint64_t got = 0;
    std::string buf(kBlock, '\0');
    for (;;) {
        la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
        if (n < 0) throw archive_error(a, "cannot read " + what);
        if (n == 0) break;
        got += static_cast<std::uint64_t>(n);
        if (got > size)
            throw Error(ErrorCode::integrity,
                        what + " is larger than the lock's size " + std::to_string(size));
        hash.update(buf.data(), static_cast<std::size_t>(n));
        if (!write_all_fd(fd.get(), buf.data(), static_cast<std::size_t>(n)))
            throw Error(ErrorCode::generic,
                        "cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
    const std::string actual = to_hex(hash.finish());
    if (got != size || actual != sha256)
        throw Error(ErrorCode::integrity, "hash mismatch for " + what + ": the lock says sha256 " +
                                              sha256 + ", the member has " + actual + " (" +
                                              std::to_string(got) + " bytes)");
    fd.reset();
    std::error_code ec;
    fs::rename(tmp, dest, ec);
    if (ec)
        throw Error(ErrorCode::generic,
                    "cannot move " + tmp.string() + " to " + dest.string() + ": " + ec.message());
    remove.release();
}

// The size of a member that may be read: a regular file under a safe name, given once.
std::uint64_t member_size(archive_entry* e, const std::string& name, const std::string& what,
                          std::set<std::string>& seen) {
    auto refuse = [&](const std::string& why) {
        return Error(ErrorCode::integrity, what + " " + why);
    };
    if (!safe_name(name)) throw refuse("has an absolute name, an empty or `..` component");
    if (archive_entry_hardlink(e) || archive_entry_symlink(e) ||
        archive_entry_filetype(e) != AE_IFREG)
        throw refuse("is not a regular file (links and devices are refused)");
    if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0) throw refuse("has no size");
    if (!seen.insert(name).second) throw refuse("appears twice");
    return static_cast<std::uint64_t>(archive_entry_size(e));
}

// Opens `file` for reading as a pack: a tar, plain, gzip or zstd.
void open_pack(archive* a, const fs::path& file) {
    archive_read_support_format_tar(a);
    archive_read_support_filter_zstd(a);
    archive_read_support_filter_gzip(a);
    if (archive_read_open_filename(a, file.c_str(), kBlock) != ARCHIVE_OK)
        throw archive_error(a, "cannot open " + file.string());
}

// Reads the builds member: each line's wheel joins `by_name` (file name → sha256 and size) and,
// checked by `fleet::accept_built_wheel`, `builds`.
// shape: the member, where it is read from, and the two maps it fills.
void read_builds(
    const std::string& text, const std::string& what, const lock::Pylock& pylock,
    std::map<std::string, std::pair<std::string, std::optional<std::uint64_t>>>& by_name,
    std::map<std::string, install::BuiltRecord>& builds) {
    kv::Reader r(text, what);
    auto head = r.next();
    if (!head || head->text != kBuildsHeader) throw r.error("not an envbox builds list");
    while (auto line = r.next()) {
        const auto f = kv::split_fields(line->value);
        std::uint64_t size = 0;
        const bool sized = f.size() == 5 && !f[2].empty() && f[2].size() <= 19 &&
                           std::all_of(f[2].begin(), f[2].end(), ::isdigit);
        if (sized) size = std::stoull(std::string(f[2]));
        auto key = sized ? kv::percent_decode(f[4]) : std::nullopt;
        if (line->key != "build" || !sized || !pep::is_sha256_hex(f[0]) ||
            !pep::is_sha256_hex(f[1]) || !key)
            throw r.error("malformed build line");
        const std::string filename(f[3]);
        fleet::accept_built_wheel(pylock, what + ": " + printable(filename), std::string(f[0]),
                                  {std::string(f[1]), filename, *key}, builds);
        if (!by_name.emplace(filename, std::pair{std::string(f[1]), size}).second)
            throw r.error(filename + " is named twice");
    }
}

}  // namespace

ReceiveResult unpack(const Context& ctx, const UnpackOptions& opt) {
    const Stopwatch start;
    const fs::path file = fs::absolute(opt.archive);
    const std::string shown = file.string();
    ReceiveOptions receive = opt.receive;
    std::string stem = file.filename().string();
    stem = stem.substr(0, stem.find('.'));
    receive.env = fleet::received_env_name(receive.env, stem);
    ReceiveResult result;
    try {
        Reader r;
        open_pack(r.a, file);
        store::Store store(ctx.home);
        const store::Home home(ctx.home);
        std::error_code ec;
        fs::create_directories(home.downloads(), ec);
        std::string lock_text;
        std::optional<lock::Pylock> pylock;
        std::map<std::string, std::pair<std::string, std::optional<std::uint64_t>>> by_name;
        std::map<std::string, install::BuiltRecord> builds;
        std::set<std::string> seen, carried;
        archive_entry* e = nullptr;
        for (int index = 0;; ++index) {
            int rc = archive_read_next_header(r.a, &e);
            if (rc == ARCHIVE_EOF) break;
            if (rc != ARCHIVE_OK) throw archive_error(r.a, "cannot read " + shown);
            const std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
            const std::string what =
                shown + ": member " + (name.empty() ? "#" + std::to_string(index) : name);
            auto refuse = [&](const std::string& why) {
                return Error(ErrorCode::integrity, what + " " + why);
            };
            const std::uint64_t size = member_size(e, name, what, seen);
            if (index == 0) {
                if (name != kLockMember) throw refuse("comes first where pylock.toml must");
                if (size > kMaxLockBytes) throw refuse("is larger than 64 MiB");
                lock_text = read_member(r.a, kMaxLockBytes, what);
                auto parsed = lock::Pylock::parse(lock_text, shown + ":" + kLockMember);
                if (!parsed) throw parsed.error();
                fleet::require_reviewed_lock(ctx, receive, lock_text, shown);
                pylock = std::move(*parsed);
                for (const auto& [sha, f] : fleet::locked_files(*pylock))
                    by_name[f.filename] = {sha, f.size};
                continue;
            }
            if (index == 1 && name == kBuildsMember) {
                if (size > kMaxBuildsBytes) throw refuse("is larger than 1 MiB");
                read_builds(read_member(r.a, kMaxBuildsBytes, what), what, *pylock, by_name,
                            builds);
                continue;
            }
            if (!name.starts_with(kWheelDir))
                throw refuse("is neither pylock.toml nor under wheels/");
            auto it = by_name.find(name.substr(std::string_view(kWheelDir).size()));
            if (it == by_name.end()) throw refuse("is not a file the lock names");
            const auto& [sha, locked_size] = it->second;
            if (locked_size && size != *locked_size)
                throw refuse("is " + std::to_string(size) + " bytes; the lock says " +
                             std::to_string(*locked_size));
            if (size > index::kMaxDownloadBytes) throw refuse("is larger than the download limit");
            result.wheels++;
            carried.insert(sha);
            if (store.load_wheel(sha)) {
                result.present++;
                archive_read_data_skip(r.a);
                continue;
            }
            extract_wheel(r.a, index::download_path(home.downloads(), sha), sha, size, what);
            result.fetched++;
            result.bytes += size;
        }
        if (lock_text.empty()) throw Error(ErrorCode::integrity, shown + " holds no pylock.toml");
        fleet::build_received(ctx, receive, lock_text, carried, builds, result);
    } catch (Error& e) {
        e.add_context("unpacking " + shown);
        throw;
    }
    result.seconds = start.total();
    return result;
}

}  // namespace envbox::ops
