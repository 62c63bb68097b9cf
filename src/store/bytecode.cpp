// Bytecode in the store: the keys, which members get a `.pyc`, the per-wheel bytecode lists,
// and storing one compiled module as an object (bytecode.hpp).
#include "envbox/store/bytecode.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "envbox/pep/digest.hpp"
#include "envbox/pep/wheel.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/sha256.hpp"
#include "store/file_list.hpp"
#include "store/sys.hpp"

namespace fs = std::filesystem;

namespace {
constexpr std::size_t kMaxBytecodeListBytes = 64u << 20;
}  // namespace

namespace envbox::store {
namespace {

constexpr std::string_view kBytecodeHeader = "envbox-bytecode 1";

bool valid_cache_tag(std::string_view t) {
    if (t.empty() || t.size() > 64) return false;
    for (char c : t)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
            return false;
    return t.front() != '-' && t.front() != '.';
}

bool valid_magic(std::string_view m) {
    if (m.size() != 8) return false;
    for (char c : m)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

}  // namespace

std::string BytecodeKey::name() const {
    if (!valid_cache_tag(cache_tag) || !valid_magic(magic) || optimize < 0 || optimize > 99)
        throw Error(ErrorCode::invalid_input, "bytecode key '" + cache_tag.substr(0, 64) + "', '" +
                                                  magic.substr(0, 16) +
                                                  "' cannot name a bytecode list");
    return cache_tag + "-" + magic + "-o" + std::to_string(optimize);
}

std::optional<BytecodeKey> BytecodeKey::parse(std::string_view name) {
    // TAG-MAGIC-oN (N: one or two digits, no leading zero), the tag itself may hold '-'.
    const auto o = name.rfind("-o");
    if (o == std::string_view::npos) return std::nullopt;
    const std::string_view level = name.substr(o + 2);
    if (level.empty() || level.size() > 2 || (level.size() == 2 && level[0] == '0'))
        return std::nullopt;
    BytecodeKey k;
    for (char c : level) {
        if (c < '0' || c > '9') return std::nullopt;
        k.optimize = k.optimize * 10 + (c - '0');
    }
    const std::string_view rest = name.substr(0, o);
    if (rest.size() < 10 || rest[rest.size() - 9] != '-') return std::nullopt;
    k.magic = std::string(rest.substr(rest.size() - 8));
    k.cache_tag = std::string(rest.substr(0, rest.size() - 9));
    if (!valid_cache_tag(k.cache_tag) || !valid_magic(k.magic)) return std::nullopt;
    return k;
}

std::string BytecodeKey::pyc_name(std::string_view source_file) const {
    std::string_view stem = source_file;
    if (stem.ends_with(".py")) stem.remove_suffix(3);
    std::string out(stem);
    out.append(".").append(cache_tag);
    if (optimize > 0) out.append(".opt-").append(std::to_string(optimize));
    return out.append(".pyc");
}

std::uint64_t WheelBytecode::total_size() const {
    std::uint64_t n = 0;
    for (const auto& f : files)
        n += f.pyc.size;
    return n;
}

std::optional<std::string> bytecode_dfile(std::string_view path, std::string_view dist_info) {
    if (!path.ends_with(".py") || pep::in_pycache(path)) return std::nullopt;
    const std::string_view name = path.substr(path.rfind('/') + 1);
    if (name.size() <= 3) return std::nullopt;  // ".py": no module
    const auto slash = path.find('/');
    if (slash == std::string_view::npos) return std::string(path);
    const std::string_view top = path.substr(0, slash), rest = path.substr(slash + 1);
    if (top.size() > 5 && top.ends_with(".data")) {
        // Only the site-packages keys of .data; scripts, headers and data are not modules.
        for (std::string_view key : {"purelib/", "platlib/"})
            if (rest.starts_with(key) && rest.size() > key.size())
                return std::string(rest.substr(key.size()));
        return std::nullopt;
    }
    if (dist_info.empty() ? top.ends_with(".dist-info") : top == dist_info) return std::nullopt;
    return std::string(path);
}

std::vector<BytecodeSource> bytecode_sources(const WheelFiles& w) {
    std::vector<BytecodeSource> out;
    for (const auto& f : w.files)
        if (auto dfile = bytecode_dfile(f.path, w.dist_info))
            out.push_back({&f, std::move(*dfile)});
    return out;
}

std::string serialise_bytecode(const WheelBytecode& b) {
    kv::Writer out(kBytecodeHeader, ' ', "the bytecode list of wheel " + b.wheel_sha256);
    out.add("key", b.key.name())
        .add("sources", std::to_string(b.sources))
        .add("compiled", std::to_string(b.files.size()));
    if (b.received) out.add("received", "yes");
    std::string line;
    for (const auto& f : b.files) {
        require_digest(f.pyc.digest, "bytecode object digest");
        require_digest(f.source_digest, "bytecode source digest");
        if (f.source.empty() || f.source.find_first_of("\r\n") != std::string::npos)
            throw Error(ErrorCode::integrity,
                        "member path '" + f.source + "' cannot be recorded in a bytecode list");
        line.assign(f.pyc.digest).append(" ").append(std::to_string(f.pyc.size)).append(" ");
        line.append(f.source_digest).append(" ").append(f.source);
        out.line(line);
    }
    return std::move(out).take();
}

std::optional<WheelBytecode> parse_bytecode(const std::string& text, std::string_view sha,
                                            const BytecodeKey& key) {
    kv::Reader r(text, "the bytecode list of wheel " + std::string(sha));
    WheelBytecode b;
    b.wheel_sha256 = std::string(sha);
    b.key = key;
    std::string key_name, sources, compiled;
    try {
        auto head = r.next();
        if (!head || head->text != kBytecodeHeader) return std::nullopt;
        auto field = [&](std::string_view k, std::string& out) {
            auto l = r.next();
            if (!l || !l->has_separator || l->key != k) return false;
            out = std::string(l->value);
            return true;
        };
        if (!field("key", key_name) || !field("sources", sources) || !field("compiled", compiled))
            return std::nullopt;
    } catch (const Error&) {
        return std::nullopt;
    }
    if (key_name != key.name()) return std::nullopt;
    std::size_t count = 0;
    try {
        b.sources = std::stoull(sources);
        count = std::stoull(compiled);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    if (count > b.sources) return std::nullopt;
    std::string_view rest = r.rest();
    constexpr std::string_view kReceived = "received yes\n";
    if (rest.starts_with(kReceived)) {
        b.received = true;
        rest.remove_prefix(kReceived.size());
    }
    while (!rest.empty()) {
        auto nl = rest.find('\n');
        std::string_view l = rest.substr(0, nl);
        rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
        // pyc-digest(64) ' ' size ' ' source-digest(64) ' ' path
        if (l.size() < 132 || l[64] != ' ' || !pep::is_sha256_hex(l.substr(0, 64)))
            return std::nullopt;
        BytecodeFile f;
        f.pyc.digest = std::string(l.substr(0, 64));
        std::size_t i = 65;
        std::uint64_t size = 0;
        while (i < l.size() && l[i] >= '0' && l[i] <= '9' && i < 85)
            size = size * 10 + static_cast<std::uint64_t>(l[i++] - '0');
        if (i == 65 || i + 66 > l.size() || l[i] != ' ' || l[i + 65] != ' ' ||
            !pep::is_sha256_hex(l.substr(i + 1, 64)))
            return std::nullopt;
        f.pyc.size = size;
        f.source_digest = std::string(l.substr(i + 1, 64));
        f.source = std::string(l.substr(i + 66));
        if (f.source.empty()) return std::nullopt;
        f.pyc.path = f.source;
        b.files.push_back(std::move(f));
        if (b.files.size() > count) return std::nullopt;
    }
    if (b.files.size() != count) return std::nullopt;
    return b;
}

namespace {

fs::path bytecode_list_path(const Home& home, std::string_view wheel_sha256,
                            const BytecodeKey& key) {
    return home.wheels() / std::string(wheel_sha256) / "bytecode" / key.name();
}

// An object's bytes into `fd`, read-only with the objects' mtime, its writeback started; false
// (errno set) on a failed call.
bool write_object(int fd, std::string_view content) {
    const struct timespec times[2] = {{kObjectMtime, 0}, {kObjectMtime, 0}};
    if (::fchmod(fd, object_mode(false)) != 0 ||
        !write_all_fd(fd, content.data(), content.size()) || ::futimens(fd, times) != 0)
        return false;
    start_writeback(fd);
    return true;
}

// What link_new_object answers when it cannot place the object (no O_TMPFILE on the
// filesystem, no usable /proc, a link refused): the staged path then does, or says why not.
constexpr int kNoTmpfile = -1;

// Set once an object could not be linked in this way: the rest are staged without trying.
std::atomic<bool> tmpfile_unusable{false};

// A small object written as an unnamed file in its own shard (O_TMPFILE), complete and
// read-only, then linked in under its name: no staging name in tmp/ and no cross-directory
// rename, which the kernel serialises across the whole filesystem (25 000 `.pyc` files of a
// pull, on every core). 0, EEXIST (an object of that name is there), an errno of the write
// (ENOSPC, EIO), or kNoTmpfile.
int link_new_object(int objects_fd, const std::string& rel, std::string_view content) {
    if (tmpfile_unusable) return kNoTmpfile;
    static const bool proc = ::access("/proc/self/fd", X_OK) == 0;
    if (!proc) {
        tmpfile_unusable = true;
        return kNoTmpfile;
    }
    const std::string shard = rel.substr(0, rel.find('/'));
    UniqueFd out(::openat(objects_fd, shard.c_str(), O_TMPFILE | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
                          object_mode(false)));
    if (!out) {
        if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return errno;
        tmpfile_unusable = true;
        return kNoTmpfile;
    }
    if (!write_object(out.get(), content)) return errno;
    // linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; /proc/self/fd does not.
    const std::string self = "/proc/self/fd/" + std::to_string(out.get());
    if (::linkat(AT_FDCWD, self.c_str(), objects_fd, rel.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
    if (errno == EEXIST) return EEXIST;
    tmpfile_unusable = true;  // EPERM from a sandbox, EXDEV, a filesystem that cannot link it
    return kNoTmpfile;
}

}  // namespace

std::optional<WheelBytecode> Store::load_bytecode(std::string_view wheel_sha256,
                                                  const BytecodeKey& key) const {
    require_digest(wheel_sha256, "wheel");
    const fs::path p = bytecode_list_path(layout_, wheel_sha256, key);
    std::error_code ec;
    if (!fs::exists(p, ec)) return std::nullopt;
    struct stat st {};
    const std::string text = read_input_file(p, kMaxBytecodeListBytes, ErrorCode::integrity);
    auto b = parse_bytecode(text, wheel_sha256, key);
    if (!b || ::lstat(p.c_str(), &st) != 0)
        throw Error(ErrorCode::integrity, "the store's bytecode list " + p.string() +
                                              " is damaged; remove it and create again");
    // A list another user could have written (a shared home) counts as received: a local
    // create compiles for itself rather than link what it names.
    if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) b->received = true;
    return b;
}

WheelFile Store::put_object(std::string_view content, bool replace) const {
    return put_hashed_object(content, to_hex(sha256(content)), replace);
}

WheelFile Store::put_hashed_object(std::string_view content, std::string digest,
                                   bool replace) const {
    WheelFile f;
    f.digest = std::move(digest);
    f.size = content.size();
    const std::string rel = object_relpath(f.digest, false);
    struct stat st {};
    if (!replace && ::fstatat(objects_dir_fd(), rel.c_str(), &st, 0) == 0 &&
        !object_touched(st, f.size, false))
        return f;
    if (!replace) {
        const int err = link_new_object(objects_dir_fd(), rel, content);
        if (err == 0) return f;
        if (err == EEXIST && ::fstatat(objects_dir_fd(), rel.c_str(), &st, 0) == 0 &&
            !object_touched(st, f.size, false))
            return f;  // another create stored it first
        if (err != kNoTmpfile && err != EEXIST)
            sys_fail("cannot store object", layout_.objects() / rel, err);
    }
    // Staged in tmp/ (the store's filesystem) under a name no other writer uses, complete and
    // read-only before it is moved in.
    static std::atomic<std::uint64_t> counter{0};
    const fs::path staged = layout_.tmp() / ("object-" + std::to_string(::getpid()) + "-" +
                                             std::to_string(counter++) + "-" + f.digest);
    {
        UniqueFd out(::open(staged.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
        if (!out) sys_fail("cannot create", staged, errno);
        if (!write_object(out.get(), content)) {
            const int err = errno;
            ::unlink(staged.c_str());
            sys_fail("cannot write", staged, err);
        }
    }
    const fs::path dest = layout_.objects() / rel;
    int err = rename_noreplace_at(AT_FDCWD, staged.c_str(), AT_FDCWD, dest.c_str());
    if (err == EEXIST) {
        // Another create stored it first (keep that one when untouched), or it was touched.
        if (!replace && ::fstatat(objects_dir_fd(), rel.c_str(), &st, 0) == 0 &&
            !object_touched(st, f.size, false)) {
            ::unlink(staged.c_str());
            return f;
        }
        err = ::rename(staged.c_str(), dest.c_str()) == 0 ? 0 : errno;
    }
    if (err != 0) {
        ::unlink(staged.c_str());
        sys_fail("cannot store object", dest, err);
    }
    return f;
}

}  // namespace envbox::store
