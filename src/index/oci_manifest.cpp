// The OCI artifact as data: references, image manifests (written and read back strictly) and
// docker config.json entries. No I/O but reading the config file; the client is oci.cpp.

#include <cctype>
#include <nlohmann/json.hpp>

#include "envbox/index/oci.hpp"
#include "envbox/pep/digest.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace envbox::index::oci {
namespace {

bool is_sha256_digest(std::string_view d) {
    if (!d.starts_with("sha256:") || d.size() != 7 + 64) return false;
    for (char c : d.substr(7))
        if (!std::isdigit(static_cast<unsigned char>(c)) && !(c >= 'a' && c <= 'f')) return false;
    return true;
}

// A repository path component: [a-z0-9]+ joined by `.`, `_`, `__`, `-`s (distribution's grammar,
// read a little more loosely: separators may not start or end a component).
bool valid_component(std::string_view c) {
    if (c.empty() || !std::isalnum(static_cast<unsigned char>(c.front())) ||
        !std::isalnum(static_cast<unsigned char>(c.back())))
        return false;
    for (char ch : c)
        if (!(std::islower(static_cast<unsigned char>(ch)) ||
              std::isdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-'))
            return false;
    return true;
}

bool valid_tag(std::string_view t) {
    if (t.empty() || t.size() > 128 || t.front() == '.' || t.front() == '-') return false;
    for (char ch : t)
        if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-'))
            return false;
    return true;
}

std::optional<std::string> unbase64(std::string_view in) {
    std::string out;
    unsigned v = 0;
    int bits = 0;
    for (char c : in) {
        int d = c >= 'A' && c <= 'Z'   ? c - 'A'
                : c >= 'a' && c <= 'z' ? c - 'a' + 26
                : c >= '0' && c <= '9' ? c - '0' + 52
                : c == '+'             ? 62
                : c == '/'             ? 63
                                       : -1;
        if (c == '=') break;
        if (d < 0) return std::nullopt;
        v = v << 6 | static_cast<unsigned>(d);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((v >> bits) & 0xff);
        }
    }
    return out;
}

// `Bearer realm="…",service="…",scope="…"` → its scheme and parameters (quoted values may hold

ordered_json descriptor_json(const Descriptor& d) {
    ordered_json j = {{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}};
    if (!d.annotations.empty()) j["annotations"] = d.annotations;
    return j;
}

Descriptor descriptor_of(const ordered_json& j, const std::string& ref, const std::string& what) {
    auto bad = [&](const std::string& why) {
        return Error(ErrorCode::integrity, ref + ": the manifest's " + what + " " + why);
    };
    if (!j.is_object()) throw bad("is not an object");
    Descriptor d;
    if (!j.contains("mediaType") || !j["mediaType"].is_string()) throw bad("has no mediaType");
    d.media_type = j["mediaType"].get<std::string>();
    if (!j.contains("digest") || !j["digest"].is_string() ||
        !is_sha256_digest(j["digest"].get<std::string>()))
        throw bad("has no sha256 digest of 64 lowercase hex digits");
    d.digest = j["digest"].get<std::string>();
    if (!j.contains("size") || !j["size"].is_number_unsigned()) throw bad("has no size");
    d.size = j["size"].get<std::uint64_t>();
    if (j.contains("annotations")) {
        if (!j["annotations"].is_object()) throw bad("has annotations that are not an object");
        for (const auto& [k, v] : j["annotations"].items())
            if (v.is_string()) d.annotations[k] = v.get<std::string>();
    }
    return d;
}

}  // namespace

// ---- references ------------------------------------------------------------------------------

Reference Reference::parse(std::string_view text) {
    auto bad = [&](const std::string& why) {
        return Error(ErrorCode::usage, "'" + std::string(text) + "' is not a registry reference (" +
                                           why + "); write REGISTRY/REPOSITORY[:TAG]");
    };
    Reference r;
    std::string rest(text);
    if (rest.starts_with("oci://")) rest = rest.substr(6);
    if (auto at = rest.find('@'); at != std::string::npos) {
        r.digest = rest.substr(at + 1);
        rest = rest.substr(0, at);
        if (!is_sha256_digest(r.digest))
            throw bad("a digest is sha256: and 64 lowercase hex digits");
    }
    auto slash = rest.find('/');
    if (slash == std::string::npos) throw bad("no registry host");
    r.registry = rest.substr(0, slash);
    if (r.registry.find_first_of(".:") == std::string::npos && r.registry != "localhost")
        throw bad("the first component must be a registry host, such as localhost:5000");
    for (char c : r.registry)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
              c == '[' || c == ']'))
            throw bad("the registry host has a character hosts do not");
    std::string path = rest.substr(slash + 1);
    if (auto colon = path.rfind(':'); colon != std::string::npos) {
        r.tag = path.substr(colon + 1);
        path = path.substr(0, colon);
        if (!valid_tag(r.tag)) throw bad("a tag is up to 128 letters, digits, '.', '_' or '-'");
    }
    if (path.empty()) throw bad("no repository");
    std::size_t start = 0;
    while (true) {
        auto end = path.find('/', start);
        if (!valid_component(path.substr(start, end - start)))
            throw bad("repository components are lowercase letters, digits, '.', '_' and '-'");
        if (end == std::string::npos) break;
        start = end + 1;
    }
    r.repository = path;
    return r;
}

std::string Reference::str() const {
    return registry + "/" + repository +
           (digest.empty() ? (tag.empty() ? "" : ":" + tag) : "@" + digest);
}

// ---- manifests -------------------------------------------------------------------------------

std::string ArtifactManifest::to_json() const {
    ordered_json j = {{"schemaVersion", 2},
                      {"mediaType", kManifestMediaType},
                      {"artifactType", artifact_type},
                      {"config", descriptor_json(config)},
                      {"layers", ordered_json::array()}};
    for (const auto& l : layers)
        j["layers"].push_back(descriptor_json(l));
    if (!annotations.empty()) j["annotations"] = annotations;
    return j.dump();
}

ArtifactManifest ArtifactManifest::parse(std::string_view json, const std::string& ref) {
    auto bad = [&](const std::string& why) {
        return Error(ErrorCode::integrity, ref + ": " + why);
    };
    ordered_json j;
    try {
        j = ordered_json::parse(json);
    } catch (const std::exception& e) {
        throw bad(std::string("the manifest is not JSON: ") + e.what());
    }
    if (!j.is_object()) throw bad("the manifest is not a JSON object");
    if (!j.contains("schemaVersion") || !j["schemaVersion"].is_number_integer() ||
        j["schemaVersion"].get<std::int64_t>() != 2)
        throw bad("the manifest's schemaVersion is not 2");
    std::string media = j.contains("mediaType") && j["mediaType"].is_string()
                            ? j["mediaType"].get<std::string>()
                            : "";
    if (media != kManifestMediaType)
        throw bad("the manifest's media type is '" + media + "', not " +
                  std::string(kManifestMediaType));
    ArtifactManifest m;
    m.artifact_type = j.contains("artifactType") && j["artifactType"].is_string()
                          ? j["artifactType"].get<std::string>()
                          : "";
    if (m.artifact_type != kArtifactType)
        throw bad("not an envbox environment (artifactType '" + m.artifact_type + "', not " +
                  std::string(kArtifactType) + ")");
    if (!j.contains("config")) throw bad("the manifest has no config");
    m.config = descriptor_of(j["config"], ref, "config");
    if (m.config.media_type != kEmptyMediaType || m.config.digest != kEmptyDigest)
        throw bad("the manifest's config is not the empty config");
    if (!j.contains("layers") || !j["layers"].is_array()) throw bad("the manifest has no layers");
    std::size_t locks = 0;
    for (std::size_t i = 0; i < j["layers"].size(); ++i) {
        Descriptor d = descriptor_of(j["layers"][i], ref, "layer " + std::to_string(i));
        if (d.media_type == kLockMediaType) {
            ++locks;
        } else if (d.media_type == kWheelMediaType) {
            auto t = d.annotations.find(std::string(kTitleAnnotation));
            if (t == d.annotations.end() || !t->second.ends_with(".whl") ||
                t->second.find_first_of("/\\") != std::string::npos || t->second.starts_with("."))
                throw bad("layer " + std::to_string(i) + " (" + d.digest +
                          ") has no wheel file name as its title");
        } else if (d.media_type == kBytecodeMediaType) {
            auto w = d.annotations.find(std::string(kBytecodeWheelAnnotation));
            auto k = d.annotations.find(std::string(kBytecodeKeyAnnotation));
            if (w == d.annotations.end() || k == d.annotations.end() ||
                !pep::is_sha256_hex(w->second) || k->second.empty() || k->second.size() > 64 ||
                k->second.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") !=
                    std::string::npos)
                throw bad("layer " + std::to_string(i) + " (" + d.digest +
                          ") names no wheel sha256 and bytecode key");
        } else {
            throw bad("layer " + std::to_string(i) + " (" + d.digest + ") has media type '" +
                      d.media_type + "', which envbox does not write");
        }
        m.layers.push_back(std::move(d));
    }
    if (locks != 1) throw bad("the manifest must hold exactly one lock layer");
    if (j.contains("annotations") && j["annotations"].is_object())
        for (const auto& [k, v] : j["annotations"].items())
            if (v.is_string()) m.annotations[k] = v.get<std::string>();
    return m;
}

// ---- credentials -----------------------------------------------------------------------------

std::optional<RegistryCredentials> docker_config_credentials(const fs::path& config,
                                                             std::string_view registry) {
    std::error_code ec;
    if (config.empty() || !fs::exists(config, ec)) return std::nullopt;
    ordered_json j;
    try {
        j = ordered_json::parse(read_file(config));
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorCode::invalid_input, config.string() + " is not JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("auths") || !j["auths"].is_object()) return std::nullopt;
    const std::string host(registry);
    for (const auto& [key, entry] : j["auths"].items()) {
        std::string k = key;
        for (const char* prefix : {"https://", "http://"})
            if (k.starts_with(prefix)) k = k.substr(std::string_view(prefix).size());
        if (auto s = k.find('/'); s != std::string::npos) k = k.substr(0, s);
        if (k != host || !entry.is_object()) continue;
        RegistryCredentials c;
        if (entry.contains("auth") && entry["auth"].is_string()) {
            auto decoded = unbase64(entry["auth"].get<std::string>());
            auto colon = decoded ? decoded->find(':') : std::string::npos;
            if (colon == std::string::npos)
                throw Error(ErrorCode::invalid_input, config.string() + ": the auth of " + key +
                                                          " is not base64 of user:password");
            c.username = decoded->substr(0, colon);
            c.password = decoded->substr(colon + 1);
        } else {
            c.username = entry.value("username", "");
            c.password = entry.value("password", "");
        }
        if (c.username.empty() && c.password.empty()) continue;
        return c;
    }
    return std::nullopt;
}

}  // namespace envbox::index::oci
