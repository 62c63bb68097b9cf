// `envbox unpack FILE [ENV]`: an environment from a file `envbox pack` wrote, every member
// checked before it is used (contracts in include/envbox/ops/fleet.hpp).

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
#include "envbox/store/bytecode_layer.hpp"
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
#include "pack_format.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {

using namespace pack_format;

namespace pack_format {

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

// The member's data into `dest` (a temporary name beside it, renamed once its size is `size`
// and its sha256 `sha256`, when that is given); anything else is refused and nothing is left.
std::string extract_member(archive* a, const fs::path& dest, const std::string& sha256,
                           std::uint64_t size, const std::string& what) {
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
    if (got != size || (!sha256.empty() && actual != sha256))
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
    return actual;
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

}  // namespace pack_format

namespace {

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

// Where a pack's bytecode members go: the store (a list it holds is not taken again), the
// downloads folder, and whether the node takes bytecode at all.
struct BytecodeSink {
    const store::Store& store;
    fs::path downloads;
    bool take = true;
    std::uint64_t bytes = 0;  // the bytecode members' sizes so far
};

// A member `bytecode/<wheel sha256>.<key name>`, after the wheels: checked as pull checks a
// bytecode layer (`fleet::accept_bytecode_layer`), then extracted for create unless the node
// takes none or the store holds that list. Returns whether it was extracted.
bool unpack_bytecode(archive* a, const std::string& name, std::uint64_t size,
                     const std::string& what, BytecodeSink& sink, Received& in) {
    const std::string rest = name.substr(std::string_view(kBytecodeDir).size());
    const auto dot = rest.find('.');
    if (dot != 64 || !pep::is_sha256_hex(rest.substr(0, 64)))
        throw Error(ErrorCode::integrity, what + " is not bytecode/<wheel sha256>.<key>");
    const std::string wheel = rest.substr(0, 64), key = rest.substr(65);
    const std::string id =
        fleet::accept_bytecode_layer(in.artifact.wheels, wheel, key, what, in.artifact.bytecode);
    sink.bytes += std::min(size, fleet::kMaxArtifactBytecodeBytes + 1);
    if (size > store::kMaxBytecodeLayerBytes || sink.bytes > fleet::kMaxArtifactBytecodeBytes)
        throw Error(ErrorCode::integrity, what + " is " + std::to_string(size) +
                                              " bytes, past the limit of a pack's bytecode");
    if (!sink.take || sink.store.load_bytecode(wheel, *store::BytecodeKey::parse(key))) {
        in.artifact.bytecode[id];  // seen: a second one is refused
        archive_read_data_skip(a);
        return false;
    }
    // Extracted under a name of this process, then named by its digest, as pull names a layer.
    const fs::path part = sink.downloads / (wheel + "." + key + ".unpack-" +
                                            std::to_string(::getpid()) + ".pyc-layer");
    ScopedRemove remove(part);
    const std::string sha = extract_member(a, part, {}, size, what);
    const fs::path to = fleet::bytecode_download(sink.downloads, sha);
    fs::rename(part, to);
    remove.release();
    in.artifact.bytecode[id] = to;
    return true;
}

// The lock member: parsed, held to the reviewed lock, and each of its files entered in
// `by_name` (file name → sha256 and size).
lock::Pylock read_lock(
    const Context& ctx, const ReceiveOptions& receive, const std::string& text,
    const std::string& shown,
    std::map<std::string, std::pair<std::string, std::optional<std::uint64_t>>>& by_name) {
    auto parsed = lock::Pylock::parse(text, shown + ":" + kLockMember);
    if (!parsed) throw parsed.error();
    fleet::require_reviewed_lock(ctx, receive, text, shown);
    for (const auto& [sha, f] : fleet::locked_files(*parsed))
        by_name[f.filename] = {sha, f.size};
    return std::move(*parsed);
}

// envbox's own pack at `file`, member by member (contract: `unpack` in ops/fleet.hpp).
void unpack_pack(const Context& ctx, const ReceiveOptions& receive, const fs::path& file,
                 ReceiveResult& result) {
    const std::string shown = file.string();
    Reader r;
    open_pack(r.a, file);
    store::Store store(ctx.home);
    const store::Home home(ctx.home);
    std::error_code ec;
    fs::create_directories(home.downloads(), ec);
    std::optional<lock::Pylock> pylock;
    std::map<std::string, std::pair<std::string, std::optional<std::uint64_t>>> by_name;
    Received in;
    in.artifact.recompile_bytecode = receive.ignore_bytecode;
    BytecodeSink sink{store, home.downloads(),
                      !receive.ignore_bytecode && receive.compile != false};
    std::set<std::string> seen;
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
            in.lock_text = read_member(r.a, kMaxLockBytes, what);
            pylock = read_lock(ctx, receive, in.lock_text, shown, by_name);
            continue;
        }
        if (index == 1 && name == kBuildsMember) {
            if (size > kMaxBuildsBytes) throw refuse("is larger than 1 MiB");
            read_builds(read_member(r.a, kMaxBuildsBytes, what), what, *pylock, by_name,
                        in.artifact.builds);
            continue;
        }
        if (name.starts_with(kBytecodeDir)) {
            if (unpack_bytecode(r.a, name, size, what, sink, in)) result.bytes += size;
            result.bytecode_layers++;
            continue;
        }
        if (!name.starts_with(kWheelDir))
            throw refuse("is neither pylock.toml nor under wheels/ or bytecode/");
        auto it = by_name.find(name.substr(std::string_view(kWheelDir).size()));
        if (it == by_name.end()) throw refuse("is not a file the lock names");
        const auto& [sha, locked_size] = it->second;
        if (locked_size && size != *locked_size)
            throw refuse("is " + std::to_string(size) + " bytes; the lock says " +
                         std::to_string(*locked_size));
        if (size > index::kMaxDownloadBytes) throw refuse("is larger than the download limit");
        result.wheels++;
        in.artifact.wheels.insert(sha);
        if (store.load_wheel(sha)) {
            result.present++;
            archive_read_data_skip(r.a);
            continue;
        }
        extract_member(r.a, index::download_path(home.downloads(), sha), sha, size, what);
        result.fetched++;
        result.bytes += size;
    }
    if (in.lock_text.empty()) throw Error(ErrorCode::integrity, shown + " holds no pylock.toml");
    std::erase_if(in.artifact.bytecode, [](const auto& b) { return b.second.empty(); });
    fleet::build_received(ctx, receive, in, result);
}

}  // namespace

ReceiveResult unpack(const Context& ctx, const UnpackOptions& opt) {
    const Stopwatch start;
    const fs::path file = fs::absolute(opt.archive);
    ReceiveOptions receive = opt.receive;
    std::string stem = file.filename().string();
    stem = stem.substr(0, stem.find('.'));
    receive.env = fleet::received_env_name(receive.env, stem);
    ReceiveResult result;
    try {
        std::error_code ec;
        // A layout is a folder or a tar file (read twice: a pipe is envbox's own pack).
        if (fs::is_directory(file, ec) || (fs::is_regular_file(file, ec) && is_oci_archive(file)))
            unpack_oci(ctx, receive, file, result);
        else
            unpack_pack(ctx, receive, file, result);
    } catch (Error& e) {
        e.add_context("unpacking " + file.string());
        throw;
    }
    result.seconds = start.total();
    return result;
}

}  // namespace envbox::ops
