#include "envbox/store/store.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <locale.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>

#include "envbox/pep/metadata.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/pep/wheel.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::store {
namespace {

constexpr std::string_view kFilesHeader = "envbox-wheel-files 1";
// Every object carries this mtime (1980-01-01, the earliest a zip can record), so identical
// content looks identical to tools that compare mtimes.
constexpr time_t kObjectMtime = 315532800;
// Members up to this size are hashed in memory and written only when the object is new;
// larger ones stream to a staging file while they are hashed.
constexpr std::size_t kInMemoryLimit = 1 << 20;

[[noreturn]] void sys_fail(const std::string& what, const fs::path& path, int err) {
    throw Error(ErrorCode::generic, what + " " + path.string() + ": " + std::strerror(err));
}

void make_dir(const fs::path& p) {
    std::error_code ec;
    fs::create_directories(p, ec);
    if (ec) throw Error(ErrorCode::generic, "cannot create directory " + p.string() + ": " + ec.message());
}

struct ArchiveCloser {
    void operator()(archive* a) const { archive_read_free(a); }
};

// A seekable archive source over one descriptor (closed on destruction).
struct ArchiveSource {
    int fd = -1;
    std::vector<char> buffer = std::vector<char>(1 << 17);
    ~ArchiveSource() {
        if (fd >= 0) ::close(fd);
    }
    static la_ssize_t read(archive*, void* self, const void** out) {
        auto* s = static_cast<ArchiveSource*>(self);
        for (;;) {
            ssize_t n = ::read(s->fd, s->buffer.data(), s->buffer.size());
            if (n < 0 && errno == EINTR) continue;
            *out = s->buffer.data();
            return n;
        }
    }
    static la_int64_t seek(archive*, void* self, la_int64_t offset, int whence) {
        off_t r = ::lseek(static_cast<ArchiveSource*>(self)->fd, static_cast<off_t>(offset), whence);
        return r < 0 ? ARCHIVE_FATAL : static_cast<la_int64_t>(r);
    }
    static la_int64_t skip(archive*, void* self, la_int64_t request) {
        auto* s = static_cast<ArchiveSource*>(self);
        off_t cur = ::lseek(s->fd, 0, SEEK_CUR);
        if (cur < 0 || ::lseek(s->fd, static_cast<off_t>(request), SEEK_CUR) < 0) return 0;
        return request;
    }
};

struct FdGuard {
    int fd = -1;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};

void write_or_fail(int fd, const void* data, std::size_t size, const fs::path& path) {
    if (!write_all_fd(fd, data, size)) sys_fail("cannot write", path, errno);
}

std::string serialise(const WheelFiles& w) {
    std::ostringstream s;
    s << kFilesHeader << "\n"
      << "wheel " << w.filename << "\n"
      << "name " << w.name << "\n"
      << "version " << w.version << "\n"
      << "dist-info " << w.dist_info << "\n"
      << "root-is-purelib " << (w.root_is_purelib ? 1 : 0) << "\n"
      << "files " << w.files.size() << "\n";
    for (const auto& f : w.files)
        s << f.digest << ' ' << (f.executable ? 'x' : '-') << ' ' << f.size << ' ' << f.path << "\n";
    return s.str();
}

std::optional<WheelFiles> deserialise(const std::string& text, std::string_view sha) {
    std::istringstream s(text);
    std::string line;
    if (!std::getline(s, line) || line != kFilesHeader) return std::nullopt;
    WheelFiles w;
    w.wheel_sha256 = std::string(sha);
    std::size_t count = 0;
    auto field = [&](std::string_view key, std::string& out) {
        if (!std::getline(s, line) || !line.starts_with(std::string(key) + " ")) return false;
        out = line.substr(key.size() + 1);
        return true;
    };
    std::string purelib, files;
    if (!field("wheel", w.filename) || !field("name", w.name) || !field("version", w.version) ||
        !field("dist-info", w.dist_info) || !field("root-is-purelib", purelib) ||
        !field("files", files))
        return std::nullopt;
    w.root_is_purelib = purelib == "1";
    try {
        count = std::stoull(files);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    w.files.reserve(count);
    // The file lines, parsed in place (verify and create read tens of thousands of them).
    std::string_view rest(text);
    rest.remove_prefix(std::min<std::size_t>(rest.size(), static_cast<std::size_t>(s.tellg())));
    while (!rest.empty()) {
        auto nl = rest.find('\n');
        std::string_view l = rest.substr(0, nl);
        rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
        // digest(64) ' ' x|- ' ' size ' ' path
        if (l.size() < 70 || l[64] != ' ' || l[66] != ' ') return std::nullopt;
        WheelFile f;
        f.digest = std::string(l.substr(0, 64));
        f.executable = l[65] == 'x';
        std::size_t i = 67;
        std::uint64_t size = 0;
        while (i < l.size() && l[i] >= '0' && l[i] <= '9') size = size * 10 + static_cast<std::uint64_t>(l[i++] - '0');
        if (i == 67 || i >= l.size() || l[i] != ' ') return std::nullopt;
        f.size = size;
        f.path = std::string(l.substr(i + 1));
        w.files.push_back(std::move(f));
    }
    if (w.files.size() != count) return std::nullopt;
    return w;
}

}  // namespace

std::uint64_t WheelFiles::total_size() const {
    std::uint64_t n = 0;
    for (const auto& f : files) n += f.size;
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
            if (::mkdir((objects / shard).c_str(), 0755) != 0 && errno != EEXIST)
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
    std::string rel;
    rel.reserve(digest.size() + 4);
    rel.append(digest.substr(0, 2)).append("/").append(digest.substr(2));
    if (executable) rel += ".x";
    return rel;
}

std::optional<WheelFiles> Store::load_wheel(std::string_view wheel_sha256) const {
    fs::path p = root() / "wheels" / std::string(wheel_sha256) / "files";
    std::error_code ec;
    if (!fs::exists(p, ec)) return std::nullopt;
    auto w = deserialise(read_file(p), wheel_sha256);
    if (!w)
        throw Error(ErrorCode::integrity, "the store's file list " + p.string() +
                                              " is damaged; remove that directory and retry");
    return w;
}

WheelFiles Store::ingest_wheel(const fs::path& archive_path, const std::string& wheel_sha256,
                               const std::string& filename, IngestStats* stats) const {
    auto parsed_name = pep::WheelFilename::parse(filename);
    if (!parsed_name) throw Error(ErrorCode::invalid_input, parsed_name.error().message());

    static std::atomic<unsigned> counter{0};
    fs::path staging = tmp_dir() / ("ingest-" + wheel_sha256.substr(0, 16) + "-" +
                                    std::to_string(::getpid()) + "-" + std::to_string(counter++));
    make_dir(staging);
    struct Cleanup {
        fs::path dir;
        int fd;
        ~Cleanup() {
            if (fd >= 0) ::close(fd);
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
    } cleanup{staging, ::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (cleanup.fd < 0) sys_fail("cannot open", staging, errno);
    const int staging_fd = cleanup.fd;
    const struct timespec object_times[2] = {{kObjectMtime, 0}, {kObjectMtime, 0}};

    // libarchive converts member names through the thread's locale: use UTF-8 here whatever
    // the user's locale is, so non-ASCII names (`வணக்கம்/નમસ્તે.py`) come through intact.
    struct Utf8Locale {
        locale_t utf8 = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
        locale_t previous = utf8 ? ::uselocale(utf8) : static_cast<locale_t>(nullptr);
        ~Utf8Locale() {
            if (utf8) {
                ::uselocale(previous);
                ::freelocale(utf8);
            }
        }
    } utf8_locale;

    std::unique_ptr<archive, ArchiveCloser> a(archive_read_new());
    archive_read_support_format_zip_seekable(a.get());
    // Wheel member names are UTF-8 whatever the process locale is.
    archive_read_set_options(a.get(), "zip:hdrcharset=UTF-8");
    auto archive_fail = [&](const std::string& what) -> Error {
        const char* msg = archive_error_string(a.get());
        return Error(ErrorCode::integrity, filename + ": " + what + (msg ? std::string(": ") + msg : ""));
    };
    // Our own descriptor and callbacks: libarchive's file reader fstat()s on every seek,
    // three system calls per member that a 50 000-member wheel set does not need.
    ArchiveSource source;
    source.fd = ::open(archive_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (source.fd < 0) sys_fail("cannot open", archive_path, errno);
    archive_read_set_read_callback(a.get(), &ArchiveSource::read);
    archive_read_set_seek_callback(a.get(), &ArchiveSource::seek);
    archive_read_set_skip_callback(a.get(), &ArchiveSource::skip);
    archive_read_set_callback_data(a.get(), &source);
    if (archive_read_open1(a.get()) != ARCHIVE_OK) throw archive_fail("not a readable wheel (zip) archive");

    WheelFiles w;
    w.wheel_sha256 = wheel_sha256;
    w.filename = filename;
    std::set<std::string> seen;                       // normalised member names
    std::unordered_map<std::string, std::string> small_texts;  // dist-info files we parse
    std::set<std::string> staged;                     // object names staged in this ingest
    std::vector<Sha256Digest> digests;                // of each member, as w.files
    std::vector<std::string> moves;                   // staged names ("ab-cdef…"), verified later
    IngestStats local;
    Sha256 hasher;
    std::vector<char> buffer(1 << 16);
    std::string content;

    for (;;) {
        archive_entry* entry = nullptr;
        int rc = archive_read_next_header(a.get(), &entry);
        if (rc == ARCHIVE_EOF) break;
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) throw archive_fail("corrupt archive");
        const char* name_utf8 = archive_entry_pathname_utf8(entry);
        std::string raw = name_utf8 ? name_utf8 : (archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "");
        auto type = archive_entry_filetype(entry);
        bool is_dir = type == AE_IFDIR || (!raw.empty() && raw.back() == '/');
        auto safe = pep::safe_member_path(raw);
        if (!safe) throw Error(ErrorCode::integrity, filename + ": " + safe.error().message());
        std::string path = std::move(*safe);
        if (is_dir) continue;
        if (type != AE_IFREG) {
            throw Error(ErrorCode::integrity,
                        filename + ": member '" + raw + "' is " +
                            (type == AE_IFLNK ? std::string("a symbolic link")
                                              : std::string("not a regular file")) +
                            "; wheels may contain only regular files");
        }
        if (!seen.insert(path).second)
            throw Error(ErrorCode::integrity,
                        filename + ": member '" + raw + "' " +
                            (raw == path ? "appears twice in the archive"
                                         : "collides with another member named '" + path + "'"));
        WheelFile f;
        f.path = path;
        f.executable = (archive_entry_perm(entry) & 0111) != 0;

        // Stream the member: in memory when small (or a dist-info file read below, whatever
        // its size: torch's RECORD is megabytes), to a staging file otherwise.
        const bool keep_text = path.ends_with(".dist-info/RECORD") || path.ends_with(".dist-info/WHEEL") ||
                               path.ends_with(".dist-info/METADATA");
        content.clear();
        FdGuard out;
        std::string stream_name;
        // Objects are created read-only from the start (the descriptor stays writable), with
        // their fixed mtime set through the descriptor: no chmod or utimensat by path later.
        const mode_t object_mode = f.executable ? 0555 : 0444;
        std::uint64_t size = 0;
        for (;;) {
            la_ssize_t n = archive_read_data(a.get(), buffer.data(), buffer.size());
            if (n < 0) throw archive_fail("cannot read member '" + raw + "'");
            if (n == 0) break;
            auto un = static_cast<std::size_t>(n);
            hasher.update(buffer.data(), un);
            size += un;
            if (out.fd < 0 && !keep_text && content.size() + un > kInMemoryLimit) {
                stream_name = "stream-" + std::to_string(w.files.size());
                out.fd = ::openat(staging_fd, stream_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                                  object_mode);
                if (out.fd < 0) sys_fail("cannot create", staging / stream_name, errno);
                write_or_fail(out.fd, content.data(), content.size(), staging / stream_name);
                content.clear();
                content.shrink_to_fit();
            }
            if (out.fd >= 0)
                write_or_fail(out.fd, buffer.data(), un, staging / stream_name);
            else
                content.append(buffer.data(), un);
        }
        f.size = size;
        digests.push_back(hasher.finish());
        f.digest = to_hex(digests.back());
        local.unpacked_bytes += size;

        if (keep_text) small_texts[path] = content;

        // Stage the object unless the store (or this ingest) already has it.
        std::string rel = object_relpath(f.digest, f.executable);
        std::string staged_name = rel;
        staged_name[2] = '-';
        struct stat st {};
        bool present = ::fstatat(objects_fd_, rel.c_str(), &st, 0) == 0 &&
                       static_cast<std::uint64_t>(st.st_size) == size;
        if (!present && staged.insert(staged_name).second) {
            if (out.fd >= 0) {
                if (::futimens(out.fd, object_times) != 0)
                    sys_fail("cannot set the mtime of", staging / stream_name, errno);
                ::close(out.fd);
                out.fd = -1;
                if (::renameat(staging_fd, stream_name.c_str(), staging_fd, staged_name.c_str()) != 0)
                    sys_fail("cannot stage", staging / staged_name, errno);
            } else {
                FdGuard sf{::openat(staging_fd, staged_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                                    object_mode)};
                if (sf.fd < 0) sys_fail("cannot create", staging / staged_name, errno);
                write_or_fail(sf.fd, content.data(), content.size(), staging / staged_name);
                if (::futimens(sf.fd, object_times) != 0)
                    sys_fail("cannot set the mtime of", staging / staged_name, errno);
            }
            moves.push_back(std::move(staged_name));
            local.new_objects++;
            local.new_object_bytes += size;
        } else if (out.fd >= 0) {
            ::close(out.fd);
            out.fd = -1;
            ::unlinkat(staging_fd, stream_name.c_str(), 0);
        }
        w.files.push_back(std::move(f));
    }

    // Exactly one .dist-info directory, named for this wheel.
    std::set<std::string> dist_infos;
    for (const auto& f : w.files) {
        auto slash = f.path.find('/');
        if (slash != std::string::npos && f.path.substr(0, slash).ends_with(".dist-info"))
            dist_infos.insert(f.path.substr(0, slash));
    }
    std::string expected_prefix = parsed_name->canonical_name;
    for (const auto& d : dist_infos) {
        auto dash = d.rfind('-', d.size() - 10);
        std::string dname = d.substr(0, dash == std::string::npos ? 0 : dash);
        if (dash != std::string::npos && pep::canonicalize_name(dname) == parsed_name->canonical_name)
            w.dist_info = d;
    }
    if (dist_infos.size() != 1 || w.dist_info.empty())
        throw Error(ErrorCode::integrity,
                    filename + ": expected exactly one .dist-info directory for '" +
                        parsed_name->name + "', found " +
                        (dist_infos.empty() ? std::string("none") : *dist_infos.begin() +
                                                                       (dist_infos.size() > 1 ? " and others" : "")));

    // WHEEL and METADATA.
    auto text_of = [&](const std::string& leaf) -> const std::string* {
        auto it = small_texts.find(w.dist_info + "/" + leaf);
        return it == small_texts.end() ? nullptr : &it->second;
    };
    const std::string* wheel_text = text_of("WHEEL");
    if (!wheel_text) throw Error(ErrorCode::integrity, filename + ": no " + w.dist_info + "/WHEEL");
    auto info = pep::parse_wheel_info(*wheel_text);
    if (!info) throw Error(ErrorCode::integrity, filename + ": " + info.error().message());
    w.root_is_purelib = info->root_is_purelib;
    const std::string* metadata = text_of("METADATA");
    if (!metadata) throw Error(ErrorCode::integrity, filename + ": no " + w.dist_info + "/METADATA");
    for (const auto& [k, v] : pep::parse_headers(*metadata)) {
        std::string key = pep::ascii_lower(k);
        if (key == "name" && w.name.empty()) w.name = v;
        if (key == "version" && w.version.empty()) w.version = v;
    }
    if (w.name.empty() || w.version.empty())
        throw Error(ErrorCode::integrity, filename + ": METADATA lacks Name or Version");

    // RECORD: every member listed with a matching sha256 and size, nothing listed that is missing.
    const std::string record_path = w.dist_info + "/RECORD";
    const std::string* record_text = text_of("RECORD");
    if (!record_text) throw Error(ErrorCode::integrity, filename + ": no " + record_path);
    auto rows = pep::parse_record(*record_text);
    if (!rows) throw Error(ErrorCode::integrity, filename + ": " + rows.error().message());
    std::map<std::string, const pep::RecordRow*> by_path;
    for (const auto& row : *rows) {
        auto norm = pep::safe_member_path(row.path);
        if (!norm) throw Error(ErrorCode::integrity, filename + ": RECORD: " + norm.error().message());
        by_path[*norm] = &row;
    }
    auto is_signature = [&](const std::string& p) {
        return p == record_path || p == record_path + ".jws" || p == record_path + ".p7s";
    };
    for (std::size_t k = 0; k < w.files.size(); ++k) {
        const WheelFile& f = w.files[k];
        auto it = by_path.find(f.path);
        if (is_signature(f.path)) {
            if (f.path != record_path && it != by_path.end())
                throw Error(ErrorCode::integrity, filename + ": " + f.path + " must not be listed in RECORD");
            continue;
        }
        if (it == by_path.end()) {
            if (pep::in_pycache(f.path)) continue;
            throw Error(ErrorCode::integrity, filename + ": member '" + f.path + "' is not listed in RECORD");
        }
        const pep::RecordRow& row = *it->second;
        if (row.hash.empty()) {
            if (pep::in_pycache(f.path)) continue;
            throw Error(ErrorCode::integrity, filename + ": RECORD lists '" + f.path + "' without a hash");
        }
        if (auto problem = pep::check_record_row(row, digests[k], f.size))
            throw Error(ErrorCode::integrity, filename + ": " + *problem);
    }
    for (const auto& [p, row] : by_path)
        if (!seen.count(p) && !p.ends_with("/"))
            throw Error(ErrorCode::integrity,
                        filename + ": RECORD lists '" + p + "', which is not in the archive");

    // Verified: move new objects into place, never replacing an existing one.
    for (const std::string& name : moves) {
        std::string rel = name;
        rel[2] = '/';
        if (::renameat2(staging_fd, name.c_str(), objects_fd_, rel.c_str(), RENAME_NOREPLACE) == 0) continue;
        int err = errno;
        if (err == EEXIST) {
            // Another ingest stored it first, or a crash left a damaged copy: keep a copy that
            // has the right size, replace one that does not.
            struct stat theirs {}, mine {};
            if (::fstatat(objects_fd_, rel.c_str(), &theirs, 0) == 0 &&
                ::fstatat(staging_fd, name.c_str(), &mine, 0) == 0 && theirs.st_size == mine.st_size)
                continue;
            if (::renameat(staging_fd, name.c_str(), objects_fd_, rel.c_str()) == 0) continue;
            err = errno;
        }
        sys_fail("cannot store object", root() / "objects" / "sha256" / rel, err);
    }
    local.archive_bytes = static_cast<std::uint64_t>(fs::file_size(archive_path));
    if (stats) *stats = local;
    return w;
}

std::optional<std::string> read_dist_info_file(const fs::path& wheel, std::string_view leaf) {
    std::unique_ptr<archive, ArchiveCloser> a(archive_read_new());
    archive_read_support_format_zip_seekable(a.get());
    archive_read_set_options(a.get(), "zip:hdrcharset=UTF-8");
    if (archive_read_open_filename(a.get(), wheel.c_str(), 1 << 16) != ARCHIVE_OK)
        throw Error(ErrorCode::integrity, wheel.string() + " is not a readable wheel (zip) archive");
    const std::string suffix = ".dist-info/" + std::string(leaf);
    for (;;) {
        archive_entry* entry = nullptr;
        int rc = archive_read_next_header(a.get(), &entry);
        if (rc == ARCHIVE_EOF) return std::nullopt;
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) throw Error(ErrorCode::integrity, wheel.string() + ": corrupt archive");
        const char* name = archive_entry_pathname(entry);
        std::string_view n = name ? name : "";
        if (!n.ends_with(suffix)) continue;
        std::string_view dir = n.substr(0, n.size() - suffix.size());
        if (dir.find('/') != std::string_view::npos) continue;  // only the top-level .dist-info
        std::string out;
        char buf[65536];
        for (;;) {
            la_ssize_t got = archive_read_data(a.get(), buf, sizeof buf);
            if (got < 0) throw Error(ErrorCode::integrity, wheel.string() + ": cannot read " + std::string(n));
            if (got == 0) break;
            out.append(buf, static_cast<std::size_t>(got));
        }
        return out;
    }
}

void Store::publish(const std::vector<const WheelFiles*>& wheels) const {
    if (wheels.empty()) return;
    sync_filesystem(root());
    for (const WheelFiles* w : wheels) {
        fs::path dir = root() / "wheels" / w->wheel_sha256;
        make_dir(dir);
        write_file_atomic(dir / "files", serialise(*w), 0444, Durability::none);
    }
}

}  // namespace envbox::store
