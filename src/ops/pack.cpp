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
#include "envbox/index/oci.hpp"
#include "envbox/ops/fleet.hpp"
#include "envbox/pep/digest.hpp"
#include "envbox/store/home.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/stopwatch.hpp"
#include "envbox/util/unique_fd.hpp"
#include "fleet_steps.hpp"
#include "pack_format.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

using namespace pack_format;

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

// The member `name`: the `size` bytes of `file`, through `buf`.
void add_file_member(archive* w, const std::string& name, const fs::path& file, std::uint64_t size,
                     std::string& buf, const fs::path& out) {
    add_member(
        w, name, size,
        [&](archive* a) {
            UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
            if (!fd)
                throw Error(ErrorCode::generic,
                            "cannot read " + file.string() + ": " + std::strerror(errno));
            std::uint64_t left = size;
            while (left > 0) {
                ssize_t n = ::read(fd.get(), buf.data(), std::min<std::uint64_t>(kBlock, left));
                if (n <= 0)
                    throw Error(ErrorCode::generic,
                                "cannot read " + file.string() + ": " +
                                    (n < 0 ? std::strerror(errno) : "shorter than its size"));
                write_data(a, buf.data(), static_cast<std::size_t>(n), name);
                left -= static_cast<std::uint64_t>(n);
            }
        },
        out);
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

// envbox's own members: pylock.toml, the builds list, wheels/<file name>, then
// bytecode/<wheel sha256>.<key>.
void write_pack_members(archive* w, const fleet::Bundle& bundle,
                        const std::vector<fleet::BundleBytecode>& layers, const Context& ctx,
                        PackResult& result) {
    add_member(
        w, kLockMember, bundle.lock_text.size(),
        [&](archive* a) {
            write_data(a, bundle.lock_text.data(), bundle.lock_text.size(), kLockMember);
        },
        result.output);
    if (const std::string builds = builds_member(bundle); !builds.empty())
        add_member(
            w, kBuildsMember, builds.size(),
            [&](archive* a) { write_data(a, builds.data(), builds.size(), kBuildsMember); },
            result.output);
    std::set<std::string> seen;
    for (const auto& wheel : bundle.wheels)
        seen.insert(wheel.filename);
    ctx.progress->phase("Packing", seen.size());
    seen.clear();
    std::string buf(kBlock, '\0');
    for (const auto& wheel : bundle.wheels) {
        if (!seen.insert(wheel.filename).second) continue;
        add_file_member(w, kWheelDir + wheel.filename, wheel.path, wheel.size, buf, result.output);
        ctx.progress->advance(1);
    }
    for (const auto& l : layers)
        add_file_member(w, kBytecodeDir + l.wheel_sha256 + "." + l.key, l.path, l.size, buf,
                        result.output);
}

// One blob of an OCI image layout: a file's bytes or bytes in memory.
struct LayoutBlob {
    std::string hex;
    std::uint64_t size = 0;
    fs::path file;
    std::string content;
};

// The layout's blobs, each once: the manifest, the empty config, the lock, the wheels, the
// bytecode layers. `index` gets index.json's text, naming the manifest by `tag`.
std::vector<LayoutBlob> layout_blobs(const fleet::Bundle& bundle,
                                     const std::vector<fleet::BundleBytecode>& layers,
                                     std::string& index) {
    const std::string manifest = fleet::artifact_manifest(bundle, layers).to_json();
    const std::string manifest_hex = to_hex(sha256(manifest));
    std::vector<LayoutBlob> out = {
        {manifest_hex, manifest.size(), {}, manifest},
        {std::string(index::oci::kEmptyDigest.substr(7)), 2, {}, "{}"},
        {bundle.lock_sha256, bundle.lock_text.size(), {}, bundle.lock_text}};
    std::set<std::string> seen = {out[0].hex, out[1].hex, out[2].hex};
    for (const auto& w : bundle.wheels)
        if (seen.insert(w.sha256).second) out.push_back({w.sha256, w.size, w.path, {}});
    for (const auto& l : layers)
        if (seen.insert(l.sha256).second) out.push_back({l.sha256, l.size, l.path, {}});
    Json descriptor = {
        {"mediaType", index::oci::kManifestMediaType},
        {"artifactType", index::oci::kArtifactType},
        {"digest", "sha256:" + manifest_hex},
        {"size", manifest.size()},
        {"annotations",
         {{"org.opencontainers.image.ref.name", "lock-" + bundle.lock_sha256.substr(0, 16)}}}};
    index = Json{{"schemaVersion", 2},
                 {"mediaType", "application/vnd.oci.image.index.v1+json"},
                 {"manifests", Json::array({descriptor})}}
                .dump();
    return out;
}

// An OCI image layout as tar members (what skopeo's `oci-archive:` reads): oci-layout,
// index.json, then blobs/sha256/<hex>.
void write_oci_members(archive* w, const fleet::Bundle& bundle,
                       const std::vector<fleet::BundleBytecode>& layers, const Context& ctx,
                       PackResult& result) {
    std::string index;
    const auto blobs = layout_blobs(bundle, layers, index);
    ctx.progress->phase("Packing", blobs.size());
    auto text_member = [&](const std::string& name, const std::string& text) {
        add_member(
            w, name, text.size(),
            [&](archive* a) { write_data(a, text.data(), text.size(), name); }, result.output);
    };
    text_member(std::string(kOciLayoutMember), std::string(kOciLayoutText));
    text_member(std::string(kOciIndexMember), index);
    std::string buf(kBlock, '\0');
    for (const auto& b : blobs) {
        const std::string name = std::string(kOciBlobDir) + b.hex;
        if (b.file.empty())
            text_member(name, b.content);
        else
            add_file_member(w, name, b.file, b.size, buf, result.output);
        ctx.progress->advance(1);
    }
}

// The same layout as a folder at `dir` (new): oci-layout, index.json, blobs/sha256/<hex>.
void write_oci_folder(const fs::path& dir, const fleet::Bundle& bundle,
                      const std::vector<fleet::BundleBytecode>& layers, const Context& ctx) {
    std::string index;
    const auto blobs = layout_blobs(bundle, layers, index);
    ctx.progress->phase("Packing", blobs.size());
    fs::create_directories(dir / kOciBlobDir);
    write_file_atomic(dir / kOciLayoutMember, kOciLayoutText);
    write_file_atomic(dir / kOciIndexMember, index);
    for (const auto& b : blobs) {
        const fs::path to = dir / kOciBlobDir / b.hex;
        if (b.file.empty())
            write_file_atomic(to, b.content);
        else
            fs::copy_file(b.file, to);
        ctx.progress->advance(1);
    }
}

}  // namespace

PackResult pack(const Context& ctx, const PackOptions& opt) {
    const Stopwatch start;
    if (opt.output.empty()) throw Error(ErrorCode::usage, "pack needs -o FILE");
    if (opt.format != PackFormat::envbox && opt.zstd.value_or(false))
        throw Error(ErrorCode::usage, "an OCI layout is never compressed: drop --zstd");
    fleet::Bundle bundle = fleet::current_bundle(ctx, opt.env);
    ctx.progress->phase("Reading wheels", 0);
    fleet::locate_wheels(ctx, bundle, ctx.jobs);
    const fleet::BytecodeLayers bytecode(ctx, bundle, opt.bytecode, ctx.jobs);
    const auto& layers = bytecode.layers;
    PackResult result;
    result.output = fs::absolute(opt.output);
    const bool zstd =
        opt.format == PackFormat::envbox && opt.zstd.value_or(zstd_by_name(opt.output));
    fs::path tmp = result.output;
    tmp += ".tmp-" + std::to_string(::getpid());
    ScopedRemove remove(tmp);

    if (opt.format == PackFormat::oci_dir) {
        try {
            write_oci_folder(tmp, bundle, layers, ctx);
        } catch (const fs::filesystem_error& e) {
            throw Error(ErrorCode::generic, "cannot write " + tmp.string() + ": " +
                                                e.code().message() + " (" + e.path1().string() +
                                                ")");
        }
    } else {
        Writer w;
        if (archive_write_set_format_pax_restricted(w.a) != ARCHIVE_OK ||
            (zstd && archive_write_add_filter_zstd(w.a) != ARCHIVE_OK))
            throw archive_error(w.a, "cannot write " + result.output.string());
        if (archive_write_open_filename(w.a, tmp.c_str()) != ARCHIVE_OK)
            throw archive_error(w.a, "cannot create " + tmp.string());
        if (opt.format == PackFormat::oci)
            write_oci_members(w.a, bundle, layers, ctx, result);
        else
            write_pack_members(w.a, bundle, layers, ctx, result);
        if (archive_write_close(w.a) != ARCHIVE_OK)
            throw archive_error(w.a, "cannot finish " + tmp.string());
    }
    std::error_code ec;
    fs::rename(tmp, result.output, ec);
    if (ec)
        throw Error(ErrorCode::generic, "cannot move " + tmp.string() + " to " +
                                            result.output.string() + ": " + ec.message());
    remove.release();
    std::set<std::string> wheels;
    for (const auto& w : bundle.wheels) {
        wheels.insert(w.filename);
        result.refetched += w.refetched;
    }
    result.wheels = wheels.size();
    result.bytecode_layers = layers.size();
    for (const auto& l : layers)
        result.pyc_files += l.files;
    result.bytes = opt.format == PackFormat::oci_dir ? 0 : fs::file_size(result.output, ec);
    result.seconds = start.total();
    return result;
}

}  // namespace envbox::ops
