// The receiving side of an artifact, whatever its blobs came through (contracts in
// fleet_steps.hpp, `receive_artifact`).

#include <algorithm>
#include <mutex>
#include <set>

#include "envbox/index/fetch.hpp"
#include "envbox/index/oci.hpp"
#include "envbox/store/bytecode_layer.hpp"
#include "envbox/store/home.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/stopwatch.hpp"
#include "fleet_steps.hpp"

namespace fs = std::filesystem;
namespace oci = envbox::index::oci;

namespace envbox::ops::fleet {
namespace {

// Every wheel layer must be a file the lock lists, of the lock's size (the blob digest is then
// the lock's sha256, and what is downloaded is checked against both), or a wheel built from
// one of its sdists (`accept_built_wheel`). Returns those built wheels by sdist.
std::map<std::string, install::BuiltRecord> check_layers(const oci::ArtifactManifest& m,
                                                         const lock::Pylock& pylock,
                                                         const std::string& ref) {
    const auto files = locked_files(pylock);
    std::map<std::string, install::BuiltRecord> builds;
    for (const auto& l : m.layers) {
        if (l.media_type != oci::kWheelMediaType) continue;
        const std::string sha = l.digest.substr(7);
        const std::string& title = l.annotations.at(std::string(oci::kTitleAnnotation));
        auto it = files.find(sha);
        const auto from = l.annotations.find(std::string(oci::kBuiltFromAnnotation));
        const auto key = l.annotations.find(std::string(oci::kBuildKeyAnnotation));
        if (it == files.end() && from != l.annotations.end() && key != l.annotations.end())
            accept_built_wheel(pylock, ref + ": layer " + title + " (" + l.digest + ")",
                               from->second, {sha, title, key->second}, builds);
        else if (it == files.end())
            throw Error(ErrorCode::integrity,
                        ref + ": layer " + title + " (" + l.digest + ") is not a file of its lock");
        if (it != files.end() && it->second.size && *it->second.size != l.size)
            throw Error(ErrorCode::integrity,
                        ref + ": layer " + title + " is " + std::to_string(l.size) +
                            " bytes in the manifest, " + std::to_string(*it->second.size) +
                            " in its lock");
        if (l.size > index::kMaxDownloadBytes)
            throw Error(ErrorCode::integrity, ref + ": layer " + title + " claims " +
                                                  std::to_string(l.size) + " bytes, past the " +
                                                  "download limit");
    }
    return builds;
}

// The artifact's bytecode layers, each checked (`accept_bytecode_layer`); returns those
// to fetch, each entered in `in.artifact.bytecode` at its place in `downloads`: all but those the
// store holds the list of, none when the node takes no bytecode.
std::vector<const oci::Descriptor*> bytecode_to_fetch(const oci::ArtifactManifest& m,
                                                      const std::string& ref,
                                                      const ReceiveOptions& receive,
                                                      const store::Store& store,
                                                      const fs::path& downloads, Received& in) {
    std::vector<const oci::Descriptor*> out;
    std::map<std::string, fs::path> seen;
    std::set<std::string> digests;
    std::uint64_t total = 0;
    for (const auto& l : m.layers) {
        if (l.media_type != oci::kBytecodeMediaType) continue;
        const std::string what = ref + ": layer " + l.digest;
        const std::string& wheel = l.annotations.at(std::string(oci::kBytecodeWheelAnnotation));
        const std::string& key = l.annotations.at(std::string(oci::kBytecodeKeyAnnotation));
        const std::string id = accept_bytecode_layer(in.artifact.wheels, wheel, key, what, seen);
        // A layer's header names its wheel and key: one blob is never the layer of two.
        if (!digests.insert(l.digest).second)
            throw Error(ErrorCode::integrity, what + " is named twice, for two wheels or keys");
        seen[id];
        total += std::min(l.size, kMaxArtifactBytecodeBytes + 1);
        if (l.size > store::kMaxBytecodeLayerBytes || total > kMaxArtifactBytecodeBytes)
            throw Error(ErrorCode::integrity, what + " claims " + std::to_string(l.size) +
                                                  " bytes, past the limit " +
                                                  "of an artifact's bytecode");
        if (receive.ignore_bytecode || receive.compile == false ||
            store.load_bytecode(wheel, *store::BytecodeKey::parse(key)))
            continue;
        in.artifact.bytecode[id] = bytecode_download(downloads, l.digest.substr(7));
        out.push_back(&l);
    }
    return out;
}

}  // namespace

void receive_artifact(const Context& ctx, const ReceiveOptions& receive,
                      const oci::ArtifactManifest& m, const std::string& name, BlobSource& source,
                      ReceiveResult& result) {
    const oci::Descriptor* lock_layer = nullptr;
    for (const auto& l : m.layers)
        if (l.media_type == oci::kLockMediaType) lock_layer = &l;
    if (lock_layer->size > index::kMaxPageBytes)
        throw Error(ErrorCode::integrity, name + ": the lock layer claims " +
                                              std::to_string(lock_layer->size) + " bytes");
    const std::string lock_text = source.read(*lock_layer);
    auto pylock = lock::Pylock::parse(lock_text, name + " (lock " + lock_layer->digest + ")");
    if (!pylock) throw pylock.error();
    require_reviewed_lock(ctx, receive, lock_text, name);
    Received in{lock_text, {}};
    in.artifact.builds = check_layers(m, *pylock, name);
    in.artifact.recompile_bytecode = receive.ignore_bytecode;

    // Blobs the store has are not fetched; the others go where `create` finds them.
    store::Store store(ctx.home);
    const store::Home home(ctx.home);
    std::error_code ec;
    fs::create_directories(home.downloads(), ec);
    std::vector<BlobTo> fetch;
    auto want = [&](const oci::Descriptor& d, const fs::path& to) {
        if (std::none_of(fetch.begin(), fetch.end(), [&](const BlobTo& f) { return f.to == to; }))
            fetch.push_back({&d, to});
    };
    for (const auto& l : m.layers) {
        if (l.media_type != oci::kWheelMediaType) continue;
        result.wheels++;
        const std::string sha = l.digest.substr(7);
        in.artifact.wheels.insert(sha);
        if (store.load_wheel(sha))
            result.present++;
        else
            want(l, index::download_path(home.downloads(), sha));
    }
    result.fetched = fetch.size();
    for (const auto* l : bytecode_to_fetch(m, name, receive, store, home.downloads(), in))
        want(*l, bytecode_download(home.downloads(), l->digest.substr(7)));
    result.bytecode_layers =
        static_cast<std::size_t>(std::count_if(m.layers.begin(), m.layers.end(), [](const auto& l) {
            return l.media_type == oci::kBytecodeMediaType;
        }));
    // The biggest first, so that no big blob (torch's wheel, its bytecode layer) starts last
    // and is fetched alone at the end.
    std::stable_sort(fetch.begin(), fetch.end(),
                     [](const BlobTo& a, const BlobTo& b) { return a.blob->size > b.blob->size; });
    std::uint64_t total = 0;
    for (const auto& f : fetch)
        total += f.blob->size;
    result.bytes = total;
    if (source.streams()) {
        // Fetched inside create's pool as it needs them: the downloads overlap the ingest. Each
        // once, by whichever task asks first, the others waiting (a failed one is tried again).
        struct Once {
            const BlobTo* blob;
            std::mutex mutex;
            bool done = false;
        };
        std::map<fs::path, Once> by_file;
        for (const auto& f : fetch) {
            in.artifact.streamed.insert(f.to);
            by_file[f.to].blob = &f;
        }
        in.artifact.receive_blob = [&source, &by_file](const fs::path& to) {
            Once& o = by_file.at(to);
            std::lock_guard lock(o.mutex);
            if (!o.done) source.fetch_one(*o.blob);
            o.done = true;
        };
        return build_received(ctx, receive, in, result);
    }
    ctx.progress->phase("Receiving", fetch.size());
    ctx.progress->download_total(total);
    const Stopwatch receiving;
    source.fetch(fetch);
    result.receive_s = receiving.total();
    build_received(ctx, receive, in, result);
}

}  // namespace envbox::ops::fleet
