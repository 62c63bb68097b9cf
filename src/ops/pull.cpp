// `envbox pull REF [ENV]`: an environment from an OCI registry, built offline from its lock and
// wheel blobs (contract in include/envbox/ops/fleet.hpp).

#include <algorithm>
#include <memory>

#include "envbox/index/fetch.hpp"
#include "envbox/index/oci.hpp"
#include "envbox/ops/fleet.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/stopwatch.hpp"
#include "fleet_steps.hpp"
#include "settings.hpp"

namespace oci = envbox::index::oci;

namespace envbox::ops {
namespace {

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

// A registry's blobs, downloaded concurrently (resumable, each checked against its digest).
class RegistrySource final : public fleet::BlobSource {
  public:
    RegistrySource(const Context& ctx, oci::RegistryClient& client) : ctx_(ctx), client_(client) {}
    std::string read(const oci::Descriptor& d) override {
        return client_.get_blob(d.digest, d.size);
    }
    void fetch(const std::vector<fleet::BlobTo>& blobs) override {
        parallel_for(blobs.size(), std::min(8u, std::max(1u, ctx_.jobs * 2)), [&](std::size_t i) {
            fetch_one(blobs[i]);
            ctx_.progress->advance(1);
        });
    }
    bool streams() const override { return true; }
    void fetch_one(const fleet::BlobTo& blob) override {
        const oci::Descriptor& d = *blob.blob;
        client_.download_blob(d.digest, d.size, blob.to,
                              [&](std::uint64_t n) { ctx_.progress->downloaded(n); });
    }

  private:
    const Context& ctx_;
    oci::RegistryClient& client_;
};

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
        const auto client = open_artifact(http, ref, opt.access, body, digest, result);
        result.manifest_digest = digest;
        oci::ArtifactManifest m = oci::ArtifactManifest::parse(body, name);
        RegistrySource source(ctx, *client);
        fleet::receive_artifact(ctx, receive, m, name, source, result);
    } catch (Error& e) {
        e.add_context("pulling " + name);
        throw;
    }
    result.seconds = start.total();
    return result;
}

}  // namespace envbox::ops
