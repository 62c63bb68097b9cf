// A wheel's bytecode for one key as one file that travels (contracts in
// store/bytecode_layer.hpp; the design in docs/ARCHITECTURE.md, "Fleet").

#include "envbox/store/bytecode_layer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
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

std::string header_of(const WheelBytecode& b, std::size_t list_bytes) {
    return std::string(kLayerHeader) + "wheel " + b.wheel_sha256 + "\nkey " + b.key.name() +
           "\nlist " + std::to_string(list_bytes) + "\n";
}

// Reads exactly `n` bytes of `fd` into `out` (resized), or fails naming `path`; each byte read
// goes into `hash` too, when given.
void read_exact(int fd, std::string& out, std::uint64_t n, const fs::path& path,
                Sha256* hash = nullptr) {
    out.resize(n);
    if (!read_exact_fd(fd, out.data(), n)) {
        if (errno != 0) sys_fail("cannot read", path, errno);
        throw Error(ErrorCode::integrity, path.string() + " ends early");
    }
    if (hash) hash->update(out);
}

// One line of the header: `field VALUE\n`, at most 128 bytes, read byte by byte (the header is
// four short lines) and hashed.
std::string header_field(int fd, std::string_view field, const std::string& what, Sha256& hash) {
    std::string line;
    char c = 0;
    while (line.size() <= 128) {
        const ssize_t r = ::read(fd, &c, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        hash.update(&c, 1);
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
void check_sources(const WheelBytecode& list, const WheelFiles& wheel, const std::string& what) {
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

WheelBytecode adopt_bytecode_layer(const Store& store, const fs::path& path,
                                   const std::string& sha256_hex, const WheelFiles& wheel,
                                   const BytecodeKey& key, const std::string& what) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd) sys_fail("cannot read", path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) sys_fail("cannot stat", path, errno);
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (!S_ISREG(st.st_mode) || size > kMaxBytecodeLayerBytes)
        throw Error(ErrorCode::integrity, what + " is not a regular file of at most " +
                                              std::to_string(kMaxBytecodeLayerBytes) + " bytes");
    Sha256 hash;
    std::string head;
    read_exact(fd.get(), head, kLayerHeader.size(), path, &hash);
    if (head != kLayerHeader)
        throw Error(ErrorCode::integrity, what + ": not an envbox bytecode layer");
    if (header_field(fd.get(), "wheel", what, hash) != wheel.wheel_sha256 ||
        header_field(fd.get(), "key", what, hash) != key.name())
        throw Error(ErrorCode::integrity, what + " is not the layer of wheel " +
                                              wheel.wheel_sha256 + " for " + key.name());
    const std::string count = header_field(fd.get(), "list", what, hash);
    std::uint64_t list_bytes = 0;
    if (count.empty() || count.size() > 9 ||
        count.find_first_not_of("0123456789") != std::string::npos ||
        (list_bytes = std::stoull(count)) > kMaxListBytes)
        throw Error(ErrorCode::integrity, what + ": a list of " + count + " bytes");
    std::string text;
    read_exact(fd.get(), text, list_bytes, path, &hash);
    auto list = parse_bytecode(text, wheel.wheel_sha256, key);
    // Exactly what envbox writes: no leading zeros, no size past 64 bits.
    if (!list || serialise_bytecode(*list) != text)
        throw Error(ErrorCode::integrity, what + ": its bytecode list is not one envbox writes");
    check_sources(*list, wheel, what);
    const auto at = static_cast<std::uint64_t>(::lseek(fd.get(), 0, SEEK_CUR));
    std::uint64_t want = at;
    for (const auto& f : list->files) {
        if (f.pyc.size < kPycHeaderBytes || f.pyc.size > kMaxBytecodeLayerBytes)
            throw Error(ErrorCode::integrity, what + ": " + f.source + "'s .pyc claims " +
                                                  std::to_string(f.pyc.size) + " bytes");
        want += f.pyc.size;
    }
    if (want != size)
        throw Error(ErrorCode::integrity, what + " is " + std::to_string(size) +
                                              " bytes; its header and list say " +
                                              std::to_string(want));
    std::string pyc;
    for (auto& f : list->files) {
        read_exact(fd.get(), pyc, f.pyc.size, path, &hash);
        const auto flags = static_cast<unsigned char>(pyc[4]);
        if (to_hex(std::string_view(pyc).substr(0, 4)) != key.magic || flags != 1 || pyc[5] != 0 ||
            pyc[6] != 0 || pyc[7] != 0)
            throw Error(ErrorCode::integrity, what + ": " + f.source + "'s .pyc is not " +
                                                  key.name() + " unchecked-hash bytecode");
        if (to_hex(sha256(pyc)) != f.pyc.digest)
            throw Error(ErrorCode::integrity,
                        what + ": " + f.source + "'s .pyc is not its sha256 " + f.pyc.digest);
        store.put_object(pyc);
    }
    // The file is the blob that was checked where it entered, read once: a file changed in
    // between is refused (its objects, stored above, are named by no list).
    if (to_hex(hash.finish()) != sha256_hex)
        throw Error(ErrorCode::integrity,
                    what + " changed after it was received: not its sha256 " + sha256_hex);
    list->received = true;
    return *list;
}

}  // namespace envbox::store
