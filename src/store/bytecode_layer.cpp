// A wheel's bytecode for one key as one file that travels (contracts in
// store/bytecode_layer.hpp; the design in docs/ARCHITECTURE.md, "Fleet").

#include "envbox/store/bytecode_layer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/unique_fd.hpp"
#include "store/sys.hpp"

namespace fs = std::filesystem;

namespace envbox::store {
namespace {

constexpr std::string_view kLayerHeader = "envbox-bytecode-layer 1\n";
// The list's text, at most: 64 MiB is ~400000 modules.
constexpr std::uint64_t kMaxListBytes = 64ull << 20;
// A .pyc's header: magic (4), flags (4, little-endian; 1 = hash-based, unchecked), source hash.
constexpr std::size_t kPycHeaderBytes = 16;
// A part of a received layer (`ReceivedLayer`): at most this many files, of about this many
// bytes. A torch wheel's ~200 MB layer is ~50 parts that spread over every core.
constexpr std::size_t kPartFiles = 256;
constexpr std::uint64_t kPartBytes = 4ull << 20;

std::string header_of(const WheelBytecode& b, std::size_t list_bytes) {
    return std::string(kLayerHeader) + "wheel " + b.wheel_sha256 + "\nkey " + b.key.name() +
           "\nlist " + std::to_string(list_bytes) + "\n";
}

// Reads exactly `n` bytes of `fd` (at `offset`, when given) into `out` (resized), or fails
// naming `path`.
void read_exact(int fd, std::string& out, std::uint64_t n, const fs::path& path,
                std::optional<std::uint64_t> offset = std::nullopt) {
    out.resize(n);
    if (offset ? !pread_exact_fd(fd, out.data(), n, *offset) : !read_exact_fd(fd, out.data(), n)) {
        if (errno != 0) sys_fail("cannot read", path, errno);
        throw Error(ErrorCode::integrity, path.string() + " ends early");
    }
}

// One line of the header: `field VALUE\n`, at most 128 bytes, read byte by byte (the header is
// four short lines) and appended to `read`, the bytes as read.
std::string header_field(int fd, std::string_view field, const std::string& what,
                         std::string& read) {
    std::string line;
    char c = 0;
    while (line.size() <= 128) {
        const ssize_t r = ::read(fd, &c, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        read += c;
        if (c == '\n') break;
        line += c;
    }
    if (c != '\n' || line.size() <= field.size() || line.compare(0, field.size(), field) != 0 ||
        line[field.size()] != ' ')
        throw Error(ErrorCode::integrity, what + ": not an envbox bytecode layer (its `" +
                                              std::string(field) + "` line)");
    return line.substr(field.size() + 1);
}

// The list's sources must be the wheel's own modules, by path and digest, each once.
void check_list_sources(const WheelBytecode& list, const WheelFiles& wheel,
                        const std::string& what) {
    std::map<std::string_view, std::string_view> modules;  // path → digest
    for (const auto& s : bytecode_sources(wheel))
        modules.emplace(s.member->path, s.member->digest);
    if (list.sources != modules.size())
        throw Error(ErrorCode::integrity, what + " counts " + std::to_string(list.sources) +
                                              " modules; the wheel has " +
                                              std::to_string(modules.size()));
    std::set<std::string_view> seen;
    for (const auto& f : list.files) {
        auto it = modules.find(f.source);
        if (it == modules.end() || it->second != f.source_digest)
            throw Error(ErrorCode::integrity, what + " names " + f.source +
                                                  ", not a module of the wheel with that digest");
        if (!seen.insert(f.source).second)
            throw Error(ErrorCode::integrity, what + " names " + f.source + " twice");
    }
}

}  // namespace

BytecodeLayer write_bytecode_layer(const Store& store, const WheelBytecode& b,
                                   const fs::path& out) {
    const std::string list = serialise_bytecode(b);
    const std::string head = header_of(b, list.size());
    UniqueFd fd(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) sys_fail("cannot create", out, errno);
    Sha256 hash;
    BytecodeLayer layer;
    auto put = [&](std::string_view bytes) {
        if (!write_all_fd(fd.get(), bytes.data(), bytes.size()))
            sys_fail("cannot write", out, errno);
        hash.update(bytes);
        layer.size += bytes.size();
    };
    put(head);
    put(list);
    std::string pyc;
    for (const auto& f : b.files) {
        // Opened in the objects folder without following a link (a planted one would send
        // whatever it points to), and sent only when its bytes are its name.
        const fs::path object = store.object_path(f.pyc.digest, false);
        const std::string rel = store.object_relpath(f.pyc.digest, false);
        UniqueFd in(::openat(store.objects_dir_fd(), rel.c_str(),
                             O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        if (!in) sys_fail("cannot read store object", object, errno);
        struct stat st {};
        if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
            static_cast<std::uint64_t>(st.st_size) != f.pyc.size)
            throw Error(ErrorCode::integrity, "store object " + object.string() + " (" + f.source +
                                                  "'s .pyc) is not the file its list says; " +
                                                  "run `envbox verify --store`");
        read_exact(in.get(), pyc, f.pyc.size, object);
        if (to_hex(sha256(pyc)) != f.pyc.digest)
            throw Error(ErrorCode::integrity, "store object " + object.string() + " (" + f.source +
                                                  "'s .pyc) is not its digest; run `envbox " +
                                                  "verify --store --deep`");
        put(pyc);
    }
    layer.sha256 = to_hex(hash.finish());
    return layer;
}

ReceivedLayer::ReceivedLayer(const Store& store, const fs::path& path, std::string sha256_hex,
                             const std::string& wheel_sha256, const BytecodeKey& key,
                             std::string what)
    : store_(store), path_(path), sha256_hex_(std::move(sha256_hex)), what_(std::move(what)) {
    fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd_) sys_fail("cannot read", path, errno);
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) sys_fail("cannot stat", path, errno);
    size_ = static_cast<std::uint64_t>(st.st_size);
    if (!S_ISREG(st.st_mode) || size_ > kMaxBytecodeLayerBytes)
        throw Error(ErrorCode::integrity, what_ + " is not a regular file of at most " +
                                              std::to_string(kMaxBytecodeLayerBytes) + " bytes");
    read_exact(fd_.get(), head_, kLayerHeader.size(), path);
    if (head_ != kLayerHeader)
        throw Error(ErrorCode::integrity, what_ + ": not an envbox bytecode layer");
    if (header_field(fd_.get(), "wheel", what_, head_) != wheel_sha256 ||
        header_field(fd_.get(), "key", what_, head_) != key.name())
        throw Error(ErrorCode::integrity,
                    what_ + " is not the layer of wheel " + wheel_sha256 + " for " + key.name());
    const std::string count = header_field(fd_.get(), "list", what_, head_);
    std::uint64_t list_bytes = 0;
    if (count.empty() || count.size() > 9 ||
        count.find_first_not_of("0123456789") != std::string::npos ||
        (list_bytes = std::stoull(count)) > kMaxListBytes)
        throw Error(ErrorCode::integrity, what_ + ": a list of " + count + " bytes");
    std::string text;
    read_exact(fd_.get(), text, list_bytes, path);
    auto list = parse_bytecode(text, wheel_sha256, key);
    // Exactly what envbox writes: no leading zeros, no size past 64 bits.
    if (!list || serialise_bytecode(*list) != text)
        throw Error(ErrorCode::integrity, what_ + ": its bytecode list is not one envbox writes");
    head_ += text;  // the header and list as read: what `check_digest` hashes them as
    list_ = std::move(*list);
    plan_parts();
}

ReceivedLayer::~ReceivedLayer() = default;

// Each .pyc's size is bounded and their sum is the rest of the file; runs of at most
// kPartFiles files and about kPartBytes each.
void ReceivedLayer::plan_parts() {
    std::uint64_t at = head_.size();
    for (std::size_t i = 0; i < list_.files.size(); ++i) {
        const BytecodeFile& f = list_.files[i];
        if (f.pyc.size < kPycHeaderBytes || f.pyc.size > kMaxBytecodeLayerBytes)
            throw Error(ErrorCode::integrity, what_ + ": " + f.source + "'s .pyc claims " +
                                                  std::to_string(f.pyc.size) + " bytes");
        if (parts_.empty() || parts_.back().end - parts_.back().begin >= kPartFiles ||
            parts_.back().bytes >= kPartBytes)
            parts_.push_back({i, i, at, 0});
        parts_.back().end = i + 1;
        parts_.back().bytes += f.pyc.size;
        at += f.pyc.size;
    }
    if (at != size_)
        throw Error(ErrorCode::integrity, what_ + " is " + std::to_string(size_) +
                                              " bytes; its header and list say " +
                                              std::to_string(at));
}

std::uint64_t ReceivedLayer::part_bytes(std::size_t part) const {
    return parts_.at(part).bytes;
}

void ReceivedLayer::store_part(std::size_t part, bool replace) const {
    const Part& p = parts_.at(part);
    std::string bytes;
    read_exact(fd_.get(), bytes, p.bytes, path_, p.offset);
    std::string_view rest(bytes);
    for (std::size_t i = p.begin; i < p.end; ++i) {
        const BytecodeFile& f = list_.files[i];
        const std::string_view pyc = rest.substr(0, f.pyc.size);
        rest.remove_prefix(f.pyc.size);
        const auto flags = static_cast<unsigned char>(pyc[4]);
        if (to_hex(pyc.substr(0, 4)) != list_.key.magic || flags != 1 || pyc[5] != 0 ||
            pyc[6] != 0 || pyc[7] != 0)
            throw Error(ErrorCode::integrity, what_ + ": " + f.source + "'s .pyc is not " +
                                                  list_.key.name() + " unchecked-hash bytecode");
        std::string digest = to_hex(sha256(pyc));
        if (digest != f.pyc.digest)
            throw Error(ErrorCode::integrity,
                        what_ + ": " + f.source + "'s .pyc is not its sha256 " + f.pyc.digest);
        store_.put_hashed_object(pyc, std::move(digest), replace);
    }
}

// The header and list as the constructor read them (the list every part follows), then the
// rest of the file: a file changed since it was received is refused.
void ReceivedLayer::check_digest() const {
    Sha256 hash;
    hash.update(head_);
    std::string chunk;
    for (std::uint64_t at = head_.size(); at < size_;) {
        const std::uint64_t n = std::min<std::uint64_t>(size_ - at, 1 << 20);
        read_exact(fd_.get(), chunk, n, path_, at);
        hash.update(chunk);
        at += n;
    }
    if (to_hex(hash.finish()) != sha256_hex_)
        throw Error(ErrorCode::integrity,
                    what_ + " changed after it was received: not its sha256 " + sha256_hex_);
}

void ReceivedLayer::check_sources(const WheelFiles& wheel) {
    if (wheel.wheel_sha256 != list_.wheel_sha256)
        throw Error(ErrorCode::integrity,
                    what_ + " is not the layer of wheel " + wheel.wheel_sha256);
    check_list_sources(list_, wheel, what_);
    sources_checked_ = true;
}

WheelBytecode ReceivedLayer::adopted() {
    if (!sources_checked_)
        throw Error(ErrorCode::generic, what_ + ": adopted before its sources were checked");
    list_.received = true;
    return std::move(list_);
}

WheelBytecode adopt_bytecode_layer(const Store& store, const fs::path& path,
                                   const std::string& sha256_hex, const WheelFiles& wheel,
                                   const BytecodeKey& key, const std::string& what) {
    ReceivedLayer layer(store, path, sha256_hex, wheel.wheel_sha256, key, what);
    layer.check_sources(wheel);
    layer.check_digest();
    for (std::size_t part = 0; part < layer.part_count(); ++part)
        layer.store_part(part);
    return layer.adopted();
}

}  // namespace envbox::store
