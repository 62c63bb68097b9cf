// `envbox push ENV REF`: the current generation's wheels, lock and an empty config as blobs of
// an OCI registry, then the manifest naming them (contract in include/envbox/ops/fleet.hpp).

#include <atomic>
#include <chrono>
#include <mutex>

#include "envbox/index/oci.hpp"
#include "envbox/ops/fleet.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/stopwatch.hpp"
#include "fleet_steps.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;
namespace oci = envbox::index::oci;

namespace envbox::ops {
namespace {

// One blob to push: a wheel's file, or bytes in memory.
struct Blob {
    std::string digest;
    std::uint64_t size = 0;
    fs::path file;
    std::string content;
};

// The repositories this home pushed to on `registry`, newest last (`cache/oci/<registry>`): a
// blob one of them holds is mounted instead of uploaded.
fs::path pushed_list(const Context& ctx, const std::string& registry) {
    std::string name;
    for (char c : registry)
        name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
    return store::Home(ctx.home).oci_cache() / (name + ".pushed");
}

std::vector<std::string> pushed_repositories(const fs::path& list) {
    std::vector<std::string> out;
    std::error_code ec;
    if (!fs::exists(list, ec)) return out;
    std::string text = read_file(list), line;
    for (char c : text) {
        if (c != '\n') {
            line += c;
            continue;
        }
        if (!line.empty()) out.push_back(line);
        line.clear();
    }
    return out;
}

void remember_repository(const fs::path& list, const std::string& repository) {
    std::vector<std::string> repos = pushed_repositories(list);
    std::erase(repos, repository);
    repos.push_back(repository);
    if (repos.size() > 16) repos.erase(repos.begin(), repos.end() - 16);
    std::string text;
    for (const auto& r : repos)
        text += r + "\n";
    std::error_code ec;
    fs::create_directories(list.parent_path(), ec);
    write_file_atomic(list, text);
}

// `cache/oci/uploads/<registry>-<16 hex of the repository>-<digest hex>`: where a chunked
// upload of that blob to that repository records how far it got.
fs::path upload_session(const Context& ctx, const oci::Reference& ref, const std::string& digest) {
    std::string name;
    for (char c : ref.registry)
        name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
    return store::Home(ctx.home).oci_cache() / "uploads" /
           (name + "-" + to_hex(sha256(ref.repository)).substr(0, 16) + "-" + digest.substr(7));
}

// The blobs, concurrently: each asked for (HEAD), else mounted from another repository of the
// registry, else uploaded (a wheel resumably, from its file). Counts go into `result`.
void push_blobs(const Context& ctx, oci::RegistryClient& client, const oci::Reference& ref,
                const std::vector<const Blob*>& blobs, const std::string& mount_from,
                PushResult& result) {
    std::uint64_t total = 0;
    for (const Blob* b : blobs)
        total += b->size;
    ctx.progress->phase("Pushing", blobs.size());
    ctx.progress->download_total(total);
    std::atomic<std::size_t> uploaded{0}, present{0}, mounted{0}, resumed{0};
    std::atomic<std::uint64_t> bytes{0};
    parallel_for(blobs.size(), std::min(8u, std::max(1u, ctx.jobs * 2)), [&](std::size_t i) {
        const Blob& b = *blobs[i];
        if (client.blob_size(b.digest)) {
            present++;
        } else if (!mount_from.empty() && client.mount_blob(b.digest, mount_from)) {
            mounted++;
        } else if (!b.file.empty()) {
            const std::uint64_t from = client.upload_blob(
                b.digest, b.file, b.size, [&](std::uint64_t n) { ctx.progress->downloaded(n); },
                upload_session(ctx, ref, b.digest));
            if (from > 0) resumed++;
            bytes += b.size - from;
            uploaded++;
        } else {
            client.upload_blob(b.digest, b.content);
            bytes += b.size;
            uploaded++;
        }
        ctx.progress->advance(1);
    });
    result.uploaded = uploaded;
    result.present = present;
    result.mounted = mounted;
    result.resumed = resumed;
    result.bytes_uploaded = bytes;
}

}  // namespace

PushResult push(const Context& ctx, const PushOptions& opt) {
    const Stopwatch start;
    oci::Reference ref = oci::Reference::parse(opt.ref);
    if (!ref.digest.empty())
        throw Error(ErrorCode::usage, "push takes a tag, not a digest: " + opt.ref);
    fleet::Bundle bundle = fleet::current_bundle(ctx, opt.env);
    if (ref.tag.empty()) ref.tag = "lock-" + bundle.lock_sha256.substr(0, 16);
    ctx.progress->phase("Reading wheels", 0);
    fleet::locate_wheels(ctx, bundle, ctx.jobs);
    const fleet::BytecodeLayers bytecode(ctx, bundle, opt.bytecode, ctx.jobs);
    const auto& layers = bytecode.layers;

    PushResult result;
    result.ref = ref.str();
    std::vector<Blob> wheels;
    for (auto& w : bundle.wheels) {
        wheels.push_back({"sha256:" + w.sha256, w.size, w.path, {}});
        if (w.refetched) result.refetched++;
    }
    Blob lock{"sha256:" + bundle.lock_sha256, bundle.lock_text.size(), {}, bundle.lock_text};
    Blob config{std::string(oci::kEmptyDigest), 2, {}, std::string(oci::kEmptyConfig)};
    std::vector<const Blob*> blobs = {&config, &lock};
    for (const auto& w : wheels)
        if (std::none_of(blobs.begin(), blobs.end(),
                         [&](const Blob* b) { return b->digest == w.digest; }))
            blobs.push_back(&w);
    std::vector<Blob> pyc;
    for (const auto& l : layers) {
        pyc.push_back({"sha256:" + l.sha256, l.size, l.path, {}});
        result.pyc_files += l.files;
    }
    for (const auto& b : pyc)
        if (std::none_of(blobs.begin(), blobs.end(),
                         [&](const Blob* x) { return x->digest == b.digest; }))
            blobs.push_back(&b);
    result.bytecode_layers = layers.size();

    index::HttpClient http(http_options(ctx, false));
    oci::RegistryClient client(http, ref, fleet::registry_options(opt.access, ref.registry));
    const fs::path list = pushed_list(ctx, ref.registry);
    std::string mount_from;
    for (const auto& r : pushed_repositories(list))
        if (r != ref.repository) mount_from = r;

    // Blobs first; the manifest last, so the tag never names a blob the registry lacks.
    try {
        push_blobs(ctx, client, ref, blobs, mount_from, result);
    } catch (Error& e) {
        e.add_context("pushing " + opt.env + " to " + ref.str());
        throw;
    }
    oci::ArtifactManifest m = fleet::artifact_manifest(bundle, layers);
    try {
        result.manifest_digest = client.put_manifest(m.to_json());
    } catch (Error& e) {
        e.add_context("pushing " + opt.env + " to " + ref.str());
        throw;
    }
    remember_repository(list, ref.repository);
    result.wheels = wheels.size();
    result.seconds = start.total();
    return result;
}

}  // namespace envbox::ops
