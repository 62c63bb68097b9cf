#include "envbox/install/built.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "envbox/pep/digest.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::install {
std::string BuildKey::text() const {
    kv::Writer w("envbox-build-key 1");
    const auto add = [&w](std::string_view field, std::string_view value) {
        w.add(std::string(field), kv::percent_encode(value));
    };
    add("sdist", sdist_sha256);
    add("build-env", build_env);
    add("python", python);
    add("platform", platform);
    add("backend", backend);
    for (const auto& [k, v] : config_settings)
        w.add_fields("config", {kv::percent_encode(k), kv::percent_encode(v)});
    for (const auto& [k, v] : variables)
        w.add_fields("variable", {kv::percent_encode(k), kv::percent_encode(v)});
    std::vector<std::string> sorted = runtime;
    std::sort(sorted.begin(), sorted.end());
    for (const auto& r : sorted)
        add("runtime", r);
    sorted = toolchain;
    std::sort(sorted.begin(), sorted.end());
    for (const auto& t : sorted)
        add("toolchain", t);
    return std::move(w).take();
}

std::string BuildKey::digest() const {
    return to_hex(sha256(text()));
}

std::optional<BuiltRecord> find_built_wheel(const store::Store& store, const BuildKey& key) {
    auto record = store.load_build(key.digest());
    if (!record) return std::nullopt;
    // A record is for the key whose digest names it: the text it keeps must be that key.
    if (record->provenance != key.text())
        throw Error(ErrorCode::integrity,
                    (store.layout().builds() / key.digest()).string() +
                        ": its key is not the key it is named after (damaged or planted)");
    // Only a record this user's envbox wrote for a build it ran decides what a local create
    // installs: one a pull or a pack carried, or one another user could have written (a
    // planted file in a shared home), is built again (docs/SECURITY.md).
    if (!record->local || !record->owned) return std::nullopt;
    if (!store.load_wheel(record->wheel_sha256)) return std::nullopt;  // collected since
    return BuiltRecord{record->wheel_sha256, record->filename, record->provenance};
}

bool is_build_key_text(std::string_view text, std::string_view sdist_sha256) {
    static constexpr std::string_view kHead = "envbox-build-key 1\n";
    static const std::set<std::string_view> kFields = {
        "sdist",  "build-env", "python",  "platform",  "backend",
        "config", "variable",  "runtime", "toolchain", "source"};
    if (text.size() > 64 * 1024 || !text.starts_with(kHead) || !text.ends_with('\n')) return false;
    bool names_sdist = false;
    std::size_t at = kHead.size();
    while (at < text.size()) {
        const std::size_t end = text.find('\n', at);
        const std::string_view line = text.substr(at, end - at);
        at = end + 1;
        for (char c : line)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
        const auto f = kv::split_fields(line);
        if (f.empty() || !kFields.count(f[0])) return false;  // "backend " may be empty
        for (std::size_t i = 1; i < f.size(); ++i)
            if (!kv::percent_decode(f[i])) return false;
        if (f[0] == "sdist") {
            if (names_sdist || f.size() != 2 || f[1] != sdist_sha256) return false;
            names_sdist = true;
        }
    }
    return names_sdist;
}

std::string built_from(std::string_view key_text) {
    std::size_t at = 0;
    while (at < key_text.size()) {
        const std::size_t end = std::min(key_text.find('\n', at), key_text.size());
        const auto f = kv::split_fields(key_text.substr(at, end - at));
        if (f.size() == 2 && f[0] == "sdist") return std::string(f[1]);
        at = end + 1;
    }
    return "";
}

std::map<std::string, BuiltRecord> built_records(const store::Store& store) {
    std::map<std::string, BuiltRecord> out;
    const fs::path folder = store.layout().builds();
    UniqueFd dir = open_own_dir_at_path(store.layout().root(), folder);
    if (!dir) return out;
    for (const auto& entry : list_own_dir(dir.get(), folder)) {
        if (entry.type != OwnEntry::Type::file || !pep::is_sha256_hex(entry.name)) continue;
        try {
            if (auto r = store.load_build(entry.name))
                out[r->wheel_sha256] = {r->wheel_sha256, r->filename, r->provenance};
        } catch (const Error&) {
            // damaged: gc's to remove, never a provenance to show or send
        }
    }
    return out;
}

std::optional<BuiltRecord> built_record_of(const std::map<std::string, BuiltRecord>& records,
                                           std::string_view wheel_sha256,
                                           std::string_view sdist_sha256) {
    auto it = records.find(std::string(wheel_sha256));
    if (it == records.end() || !is_build_key_text(it->second.key_text, sdist_sha256))
        return std::nullopt;
    return it->second;
}

void record_received_build(const store::Store& store, const BuiltRecord& record) {
    const std::string key = to_hex(sha256(record.key_text));
    if (!store.load_build(key))
        store.record_build(key,
                           {record.wheel_sha256, record.filename, record.key_text, false, false});
}

namespace {

// The built wheel copied into the store's tmp/ and hashed from the same bytes, in one read
// (no check-then-read: the copy is what is hashed, ingested and kept). The build is over, its
// every process gone, before this runs. Bounded: a wheel of more than 16 GiB is refused.
std::string copy_and_hash(const fs::path& wheel, const fs::path& copy) {
    constexpr std::uint64_t kMax = 16ull << 30;
    UniqueFd in(::open(wheel.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    if (!in || ::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode))
        throw Error(ErrorCode::integrity,
                    wheel.string() + ": the built wheel is not a regular file");
    UniqueFd out(::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!out)
        throw Error(ErrorCode::generic,
                    "cannot create " + copy.string() + ": " + std::strerror(errno));
    Sha256 hash;
    std::vector<char> buf(1 << 20);
    std::uint64_t total = 0;
    for (;;) {
        const ssize_t n = ::read(in.get(), buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw Error(ErrorCode::generic,
                        "cannot read " + wheel.string() + ": " + std::strerror(errno));
        if (n == 0) break;
        total += static_cast<std::uint64_t>(n);
        if (total > kMax)
            throw Error(ErrorCode::integrity,
                        wheel.string() + ": the built wheel is larger than 16 GiB");
        hash.update(buf.data(), static_cast<std::size_t>(n));
        if (!write_all_fd(out.get(), buf.data(), static_cast<std::size_t>(n)))
            throw Error(ErrorCode::generic,
                        "cannot write " + copy.string() + ": " + std::strerror(errno));
    }
    return to_hex(hash.finish());
}

}  // namespace

BuiltRecord store_built_wheel(const store::Store& store, const BuildKey& key,
                              const fs::path& wheel) {
    BuiltRecord out;
    out.filename = wheel.filename().string();
    out.key_text = key.text();
    // A private copy: push and pack send built wheels as they send downloaded ones, and the
    // build's folder is removed after.
    const fs::path copy = store.tmp_dir() / ("built-" + std::to_string(::getpid()) + "-" +
                                             key.digest().substr(0, 16));
    std::error_code ec;
    fs::remove(copy, ec);
    try {
        out.wheel_sha256 = copy_and_hash(wheel, copy);
        store::Ingest ingest(store, copy, out.wheel_sha256, out.filename, false);
        for (std::size_t t = 0; t < ingest.task_count(); ++t)  // one wheel of a build: one thread
            ingest.run_task(t);
        const store::WheelFiles files = ingest.finish();
        store.publish({&files});
        store.keep_archive(out.wheel_sha256, copy);
    } catch (...) {
        fs::remove(copy, ec);
        throw;
    }
    store.record_build(key.digest(), {out.wheel_sha256, out.filename, out.key_text, true, true});
    return out;
}

}  // namespace envbox::install
