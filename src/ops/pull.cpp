// `envbox pull REF [ENV]`: an environment from an OCI registry, built offline from its lock and
// wheel blobs (contract in include/envbox/ops/fleet.hpp).

#include <atomic>
#include <chrono>
#include <memory>
#include <set>

#include "envbox/index/fetch.hpp"
#include "envbox/index/oci.hpp"
#include "envbox/ops/fleet.hpp"
#include "envbox/store/home.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/stopwatch.hpp"
#include "fleet_steps.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;
namespace oci = envbox::index::oci;

namespace envbox::ops {
namespace {

// Every wheel layer must be a file the lock lists, of the lock's size (the blob digest is then
// the lock's sha256, and what is downloaded is checked against both), or a wheel built from
// one of its sdists (`fleet::accept_built_wheel`). Returns those built wheels by sdist.
std::map<std::string, install::BuiltRecord> check_layers(const oci::ArtifactManifest& m,
                                                         const lock::Pylock& pylock,
                                                         const std::string& ref) {
    const auto files = fleet::locked_files(pylock);
    std::map<std::string, install::BuiltRecord> builds;
    for (const auto& l : m.layers) {
        if (l.media_type != oci::kWheelMediaType) continue;
        const std::string sha = l.digest.substr(7);
        const std::string& title = l.annotations.at(std::string(oci::kTitleAnnotation));
        auto it = files.find(sha);
        const auto from = l.annotations.find(std::string(oci::kBuiltFromAnnotation));
        const auto key = l.annotations.find(std::string(oci::kBuildKeyAnnotation));
        if (it == files.end() && from != l.annotations.end() && key != l.annotations.end())
            fleet::accept_built_wheel(pylock, ref + ": layer " + title + " (" + l.digest + ")",
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

// The client the artifact is pulled through, with the manifest's body and digest: the mirror
// ENVBOX_REGISTRY_MIRROR names for its registry when that answers the manifest (with only the
// docker config's credentials for the mirror's host), else the registry itself. A mirror that
// answers with bytes that are not what was asked for is an integrity error, never passed over.
std::unique_ptr<oci::RegistryClient> open_artifact(index::HttpClient& http,
                                                   const oci::Reference& ref,
                                                   const RegistryAccess& access, std::string& body,
                                                   std::string& digest, ReceiveResult& result) {
    if (auto mirror = fleet::mirror_for(access.mirrors, ref.registry)) {
        oci::Reference via = ref;
        via.registry = mirror->host;
        RegistryAccess own;
        own.plain_http = mirror->plain_http;
        own.ca_file = access.ca_file;
        own.docker_config = access.docker_config;
        auto client = std::make_unique<oci::RegistryClient>(
            http, via, fleet::registry_options(own, mirror->host));
        try {
            body = client->get_manifest(digest);
            result.mirror = mirror->host;
            return client;
        } catch (const Error& e) {
            if (e.code() != ErrorCode::network) throw;
            // The mirror's words, shown: printable and short.
            result.mirror_failed = "the mirror " + mirror->host +
                                   " did not answer: " + printable(e.message().substr(0, 300));
        }
    }
    auto client = std::make_unique<oci::RegistryClient>(
        http, ref, fleet::registry_options(access, ref.registry));
    body = client->get_manifest(digest);
    return client;
}

}  // namespace

ReceiveResult pull(const Context& ctx, const PullOptions& opt) {
    const Stopwatch start;
    const oci::Reference ref = oci::Reference::parse(opt.ref);
    if (ref.tag.empty() && ref.digest.empty())
        throw Error(ErrorCode::usage, opt.ref + " names no tag or digest (REGISTRY/REPO:TAG)");
    ReceiveOptions receive = opt.receive;
    receive.env =
        fleet::received_env_name(receive.env, ref.repository.substr(ref.repository.rfind('/') + 1));
    ReceiveResult result;
    index::HttpClient http(http_options(ctx, false));
    const std::string name = ref.str();
    try {
        std::string digest, body;
        const auto through = open_artifact(http, ref, opt.access, body, digest, result);
        oci::RegistryClient& client = *through;
        result.manifest_digest = digest;
        oci::ArtifactManifest m = oci::ArtifactManifest::parse(body, name);
        const oci::Descriptor* lock_layer = nullptr;
        for (const auto& l : m.layers)
            if (l.media_type == oci::kLockMediaType) lock_layer = &l;
        if (lock_layer->size > index::kMaxPageBytes)
            throw Error(ErrorCode::integrity, name + ": the lock layer claims " +
                                                  std::to_string(lock_layer->size) + " bytes");
        const std::string lock_text = client.get_blob(lock_layer->digest, lock_layer->size);
        auto pylock = lock::Pylock::parse(lock_text, name + " (lock " + lock_layer->digest + ")");
        if (!pylock) throw pylock.error();
        fleet::require_reviewed_lock(ctx, receive, lock_text, name);
        const auto builds = check_layers(m, *pylock, name);

        // Blobs the store has are not fetched; the others go where `create` finds them.
        store::Store store(ctx.home);
        const store::Home home(ctx.home);
        std::error_code ec;
        fs::create_directories(home.downloads(), ec);
        std::vector<const oci::Descriptor*> fetch;
        std::set<std::string> carried;
        for (const auto& l : m.layers) {
            if (l.media_type != oci::kWheelMediaType) continue;
            result.wheels++;
            const std::string sha = l.digest.substr(7);
            carried.insert(sha);
            if (store.load_wheel(sha))
                result.present++;
            else if (std::none_of(fetch.begin(), fetch.end(),
                                  [&](const oci::Descriptor* d) { return d->digest == l.digest; }))
                fetch.push_back(&l);
        }
        std::uint64_t total = 0;
        for (const auto* d : fetch)
            total += d->size;
        ctx.progress->phase("Pulling", fetch.size());
        ctx.progress->download_total(total);
        std::atomic<std::uint64_t> bytes{0};
        parallel_for(fetch.size(), std::min(8u, std::max(1u, ctx.jobs * 2)), [&](std::size_t i) {
            const oci::Descriptor& d = *fetch[i];
            client.download_blob(d.digest, d.size,
                                 index::download_path(home.downloads(), d.digest.substr(7)),
                                 [&](std::uint64_t n) { ctx.progress->downloaded(n); });
            bytes += d.size;
            ctx.progress->advance(1);
        });
        result.fetched = fetch.size();
        result.bytes = bytes;
        fleet::build_received(ctx, receive, lock_text, carried, builds, result);
    } catch (Error& e) {
        e.add_context("pulling " + name);
        throw;
    }
    result.seconds = start.total();
    return result;
}

}  // namespace envbox::ops
