// What push, pull, pack and unpack share (contracts in fleet_steps.hpp).

#include "fleet_steps.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#include "envbox/index/fetch.hpp"
#include "envbox/install/fetch.hpp"
#include "envbox/install/git.hpp"
#include "envbox/install/local.hpp"
#include "envbox/install/source_build.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/store/bytecode_layer.hpp"
#include "envbox/store/home.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/sha256.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;

namespace envbox::ops::fleet {

std::map<std::string, LockedFile> locked_files(const lock::Pylock& pylock) {
    std::map<std::string, LockedFile> out;
    for (const auto& p : pylock.packages) {
        for (const auto& w : p.wheels)
            if (auto sha = w.sha256()) out[*sha] = {w.filename(), w.size};
        if (p.archive)
            if (auto sha = p.archive->sha256())
                out[*sha] = {p.archive->filename(), p.archive->size};
    }
    return out;
}

Bundle current_bundle(const Context& ctx, const std::string& env) {
    check_env_name(env);
    const fs::path edir = env_dir(ctx, env);
    auto gen = env::current_generation(edir);
    if (!gen)
        throw Error(ErrorCode::generic,
                    env + " has no generation to send (run `envbox create " + env + "` first)");
    Bundle b;
    b.env = env;
    b.generation = *gen;
    const fs::path lock_path = gen->path / ".envbox" / "pylock.toml";
    // The generation's own lock, never read through a link.
    auto text = env::read_generation_lock(gen->path);
    if (!text)
        throw Error(ErrorCode::integrity, lock_path.string() +
                                              " is missing: the generation is damaged (run `envbox "
                                              "verify " +
                                              env + "`)");
    auto parsed = lock::parse_lock_file(lock_path, std::move(*text));
    if (!parsed) throw parsed.error();
    b.lock_text = parsed->text;
    b.lock_sha256 = to_hex(sha256(b.lock_text));
    b.pylock = std::move(parsed->pylock);
    std::map<std::string, const lock::FileRef*> by_sha;
    std::map<std::string, std::string> sdist_of;  // packages the lock builds: their sdist sha256
    for (const auto& p : b.pylock.packages) {
        if (p.sdist)
            if (auto sha = p.sdist->sha256()) sdist_of[p.name] = *sha;
        for (const auto& w : p.wheels)
            if (auto sha = w.sha256()) by_sha[*sha] = &w;
        if (p.archive)
            if (auto sha = p.archive->sha256()) by_sha[*sha] = &*p.archive;
    }
    const std::map<std::string, const lock::Package*> local = local_packages(b.pylock);
    // An editable project ships as a regular wheel of its tree, built now (before the records
    // are read, which then hold its build).
    const auto shipped = shipped_editables(ctx, env, *gen, b.lock_text, local);
    std::map<std::string, install::BuiltRecord> built;  // read once, when the lock builds
    if (!sdist_of.empty() || !local.empty()) built = install::built_records(store::Store(ctx.home));
    for (const auto& pkg : gen->packages) {
        BundleWheel w;
        w.name = pkg.name;
        w.version = pkg.version;
        w.filename = pkg.filename;
        w.sha256 = pkg.wheel_sha256;
        auto it = by_sha.find(w.sha256);
        if (auto l = local.find(w.name); l != local.end()) {  // the wheel its build made here
            if (auto e = shipped.find(w.name); e != shipped.end()) {
                w.filename = e->second.filename;
                w.sha256 = e->second.sha256;
            }
            sent_as_built(ctx, env, *l->second, built, gen->lock_source, w);
            b.wheels.push_back(std::move(w));
            continue;
        }
        auto sdist = sdist_of.find(pep::canonicalize_name(w.name));
        if (it == by_sha.end() && sdist != sdist_of.end()) {
            auto record = install::built_record_of(built, w.sha256, sdist->second);
            if (!record)
                throw Error(ErrorCode::integrity,
                            env + " installs " + w.filename + ", built from " + w.name +
                                "'s sdist, and the store keeps no record of that build: create " +
                                env + " again (`envbox create " + env + " --force`)");
            w.built_from = sdist->second;
            w.build_key = record->key_text;
            b.wheels.push_back(std::move(w));
            continue;
        }
        w.file = it->second;
        if (w.file->size) w.size = *w.file->size;
        b.wheels.push_back(std::move(w));
    }
    b.python = gen->python_version;
    b.platform = gen->platform;
    b.cuda = "none";
    if (parsed->tool && !parsed->tool->cuda.empty()) b.cuda = parsed->tool->cuda;
    return b;
}

namespace {

index::ArtifactRequest refetch_request(const BundleWheel& w,
                                       const std::vector<resolve::IndexConfig>& indexes,
                                       const lock::Pylock& pylock) {
    if (!w.file)
        return {w.filename,   "",           w.sha256,    std::nullopt,
                std::nullopt, std::nullopt, std::nullopt};  // built here: the store's kept archive
                                                            // or nothing
    std::optional<std::string> index;  // the index of w's package, as the lock gives it
    for (const auto& p : pylock.packages)
        if (p.name == w.name && p.index) index = p.index;
    return install::artifact_request(w.filename, *w.file, w.sha256, index, indexes);
}

}  // namespace

void locate_wheels(const Context& ctx, Bundle& b, unsigned jobs) {
    const auto indexes = project_indexes(ctx, b.env);
    std::vector<install::WantedWheel> wanted;
    for (const BundleWheel& w : b.wheels)
        wanted.push_back(
            {w.filename, w.sha256, w.size, refetch_request(w, indexes, b.pylock), {}, false});
    install::LocateOptions opt;
    opt.downloads = store::Home(ctx.home).downloads();
    opt.lock_dir = fs::path(b.generation.lock_source).parent_path();
    opt.http = http_options(ctx, false);
    opt.owner = b.env;
    opt.jobs = jobs;
    store::Store store(ctx.home);
    FileLock held = FileLock::shared(store::Home(ctx.home).store_lock());
    install::locate_wheels(store, wanted, opt);
    for (std::size_t i = 0; i < wanted.size(); ++i) {
        b.wheels[i].path = wanted[i].path;
        b.wheels[i].size = wanted[i].size;
        b.wheels[i].refetched = wanted[i].refetched;
    }
}

index::oci::RegistryOptions registry_options(const RegistryAccess& access,
                                             const std::string& registry) {
    index::oci::RegistryOptions o;
    o.plain_http = access.plain_http;
    o.ca_file = access.ca_file;
    o.chunk_bytes = access.chunk_bytes ? access.chunk_bytes : o.chunk_bytes;
    o.credentials = access.credentials;
    if (!o.credentials)
        o.credentials = index::oci::docker_config_credentials(access.docker_config, registry);
    return o;
}

std::optional<Mirror> mirror_for(const std::string& spec, const std::string& registry) {
    std::size_t at = 0;
    while (at < spec.size()) {
        const std::size_t end = std::min(spec.find(',', at), spec.size());
        const std::string entry = spec.substr(at, end - at);
        at = end + 1;
        const auto eq = entry.find('=');
        const std::string from = entry.substr(0, eq == std::string::npos ? 0 : eq);
        std::string url = eq == std::string::npos ? "" : entry.substr(eq + 1);
        const bool plain = url.starts_with("http://");
        if (plain || url.starts_with("https://")) url = url.substr(url.find("//") + 2);
        while (!url.empty() && url.back() == '/')
            url.pop_back();
        const auto host_char = [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
                   c == ':' || c == '[' || c == ']';
        };
        const bool ok = !from.empty() && !url.empty() && entry.size() <= 512 &&
                        std::all_of(from.begin(), from.end(), host_char) &&
                        std::all_of(url.begin(), url.end(), host_char) &&
                        (plain || entry.find("=https://") != std::string::npos);
        if (!ok)
            throw Error(ErrorCode::usage, "ENVBOX_REGISTRY_MIRROR: '" + printable(entry) +
                                              "' is not REGISTRY=http(s)://HOST[:PORT]");
        if (from == registry) return Mirror{url, plain};
    }
    return std::nullopt;
}

std::string received_env_name(const std::string& given, const std::string& fallback) {
    if (!given.empty()) {
        check_env_name(given);
        return given;
    }
    std::string name;
    for (char c : fallback)
        name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'
                    ? c
                    : '-';
    while (!name.empty() && name.front() == '.')
        name.erase(name.begin());
    check_env_name(name);
    return name;
}

void accept_built_wheel(const lock::Pylock& pylock, const std::string& what,
                        const std::string& built_from, const install::BuiltRecord& wheel,
                        std::map<std::string, install::BuiltRecord>& builds) {
    const auto refuse = [&](const std::string& why) {
        return Error(ErrorCode::integrity, what + " " + why);
    };
    const lock::Package* package = nullptr;
    const auto wheel_name = pep::WheelFilename::parse(wheel.filename);
    for (const auto& p : pylock.packages)
        if ((p.sdist && p.sdist->sha256() == built_from) ||
            ((p.directory || p.vcs) && wheel_name && wheel_name->canonical_name == p.name))
            package = &p;
    if (!package)
        throw refuse("is not a file of its lock, nor built from one of its sdists or sources");
    const auto name = pep::WheelFilename::parse(wheel.filename);
    if (wheel.filename.find('/') != std::string::npos || !name ||
        name->canonical_name != package->name)
        throw refuse("is not named as a wheel of " + package->name);
    const std::string source = package->sdist ? package->sdist->filename() : package->name;
    if (!install::is_build_key_text(wheel.key_text, built_from))
        throw refuse("comes with a build key that is not the key of a build of " + source);
    // A local package's build is found by its name (a node has no tree to take a digest of).
    const std::string key = package->sdist ? built_from : "local " + package->name;
    if (!builds.emplace(key, wheel).second) throw refuse("is a second wheel built from " + source);
}

namespace {

// The context a received environment is built in: the current directory is the project when
// there is none.
Context receiving_context(const Context& ctx) {
    Context c = ctx;
    if (c.project_root.empty()) c.project_root = fs::current_path();
    return c;
}

}  // namespace

void require_reviewed_lock(const Context& ctx, const ReceiveOptions& opt,
                           const std::string& lock_text, const std::string& what) {
    const fs::path project_lock = receiving_context(ctx).project().lock(opt.env);
    const fs::path reviewed = opt.trusted_lock ? *opt.trusted_lock : project_lock;
    std::error_code ec;
    const bool exists = fs::exists(reviewed, ec);
    if (ec)  // a lock that cannot be looked at is never taken for no lock
        throw Error(ErrorCode::integrity, "cannot read " + reviewed.string() + ": " + ec.message());
    if (!opt.trusted_lock && !exists) return;  // no lock here: the artifact's is taken
    const std::string text = read_input_file(reviewed);
    if (text == lock_text || (!opt.trusted_lock && opt.update_lock)) return;
    const std::string ours = "sha256:" + to_hex(sha256(text)),
                      theirs = "sha256:" + to_hex(sha256(lock_text));
    throw Error(
        ErrorCode::integrity,
        what + " carries a lock (" + theirs + ") that is not the reviewed " + reviewed.string() +
            " (" + ours + "); nothing was fetched or stored. " +
            (opt.trusted_lock ? std::string("Name the artifact built from that lock")
                              : "Name the artifact built from that lock (`envbox push " + opt.env +
                                    "` where it was built), or take the artifact's lock over it "
                                    "with --update-lock"));
}

index::oci::ArtifactManifest artifact_manifest(const Bundle& b,
                                               const std::vector<BundleBytecode>& bytecode) {
    namespace oci = index::oci;
    oci::ArtifactManifest m;
    m.artifact_type = oci::kArtifactType;
    m.config = {std::string(oci::kEmptyMediaType), std::string(oci::kEmptyDigest), 2, {}};
    m.layers.push_back({std::string(oci::kLockMediaType),
                        "sha256:" + b.lock_sha256,
                        b.lock_text.size(),
                        {{std::string(oci::kTitleAnnotation), "pylock." + b.env + ".toml"}}});
    for (std::size_t i = 0; i < b.wheels.size(); ++i) {
        const BundleWheel& w = b.wheels[i];
        m.layers.push_back({std::string(oci::kWheelMediaType),
                            "sha256:" + w.sha256,
                            w.size,
                            {{std::string(oci::kTitleAnnotation), w.filename}}});
        if (!w.built_from.empty()) {
            m.layers.back().annotations[std::string(oci::kBuiltFromAnnotation)] = w.built_from;
            m.layers.back().annotations[std::string(oci::kBuildKeyAnnotation)] = w.build_key;
        }
    }
    for (const auto& l : bytecode)
        m.layers.push_back({std::string(oci::kBytecodeMediaType),
                            "sha256:" + l.sha256,
                            l.size,
                            {{std::string(oci::kTitleAnnotation), l.filename + "." + l.key},
                             {std::string(oci::kBytecodeWheelAnnotation), l.wheel_sha256},
                             {std::string(oci::kBytecodeKeyAnnotation), l.key}}});
    m.annotations = {{"dev.envbox.environment", b.env},
                     {"dev.envbox.python", b.python},
                     {"dev.envbox.platform", b.platform},
                     {"dev.envbox.cuda", b.cuda},
                     {"org.opencontainers.image.created", b.generation.created}};
    return m;
}

void build_received(const Context& ctx, const ReceiveOptions& opt, const Received& received,
                    ReceiveResult& result) {
    const Context c = receiving_context(ctx);
    const fs::path lock_path = c.project().lock(opt.env);
    result.env = opt.env;
    result.lock_path = lock_path;
    CreateOptions co;
    co.env = opt.env;
    co.frozen = true;
    co.offline = true;
    co.link_mode = opt.link_mode;
    co.compile = opt.compile;
    co.allow_cuda_change = opt.allow_cuda_change;
    co.retry = opt.retry;
    std::error_code ec;
    auto remove_layers = [&] {
        for (const auto& [key, file] : received.artifact.bytecode)
            fs::remove(file, ec);
    };
    try {
        // The lock is written to the project once the environment is built.
        result.create = create(c, co, &received);
    } catch (...) {
        // The project's lock is untouched (an interrupted pull too); no layer stays behind.
        remove_layers();
        throw;
    }
    remove_layers();
    fs::create_directories(lock_path.parent_path(), ec);
    write_file_atomic(lock_path, received.lock_text);
    result.pyc_received = result.create.fetch.bytecode.received;
    result.compiled = result.create.fetch.bytecode.compiled;
}

std::string accept_bytecode_layer(const std::set<std::string>& carried, const std::string& wheel,
                                  const std::string& key, const std::string& what,
                                  const std::map<std::string, fs::path>& taken) {
    if (!carried.count(wheel))
        throw Error(ErrorCode::integrity, what + " is the bytecode of wheel " + wheel +
                                              ", which the artifact does not carry");
    if (!store::BytecodeKey::parse(key))
        throw Error(ErrorCode::integrity, what + " names no bytecode key: " + printable(key));
    std::string id = wheel + "/" + key;
    if (taken.count(id))
        throw Error(ErrorCode::integrity, what + " is a second bytecode layer of " + id);
    const auto first = taken.lower_bound(wheel + "/");
    if (std::distance(first, taken.lower_bound(wheel + "0")) >=
        static_cast<std::ptrdiff_t>(kMaxBytecodeKeysPerWheel))
        throw Error(ErrorCode::integrity,
                    what + " is one bytecode layer too many for wheel " + wheel);
    return id;
}

fs::path bytecode_download(const fs::path& downloads, const std::string& sha256) {
    return downloads / (sha256 + ".pyc-layer");
}

BytecodeLayers::BytecodeLayers(const Context& ctx, const Bundle& bundle, bool send, unsigned jobs) {
    if (!send) return;
    ctx.progress->phase("Reading bytecode", 0);
    std::vector<store::BytecodeKey> keys;
    for (const auto& name : bundle.generation.bytecode)
        if (auto k = store::BytecodeKey::parse(name)) keys.push_back(*k);
    if (keys.empty()) return;
    const store::Home home(ctx.home);
    // Held while the folder lives (gc's sweep empties tmp/, and waits for it).
    make_own_dir_at_path(ctx.home, home.locks());
    lock_.emplace(FileLock::shared(home.store_lock()));
    make_own_dir_at_path(ctx.home, home.tmp());
    dir_.emplace(home.tmp(),
                 home.tmp() / install::work_folder_name("bytecode", bundle.lock_sha256));
    make_own_dir_at_path(home.tmp(), dir_->path);
    store::Store store(ctx.home);
    std::vector<std::pair<const BundleWheel*, const store::BytecodeKey*>> todo;
    std::set<std::string> seen;
    for (const auto& w : bundle.wheels)
        if (seen.insert(w.sha256).second)
            for (const auto& k : keys)
                todo.emplace_back(&w, &k);
    std::vector<std::optional<BundleBytecode>> out(todo.size());
    parallel_for(todo.size(), jobs, [&](std::size_t i) {
        const auto& [w, key] = todo[i];
        auto list = store.load_bytecode(w->sha256, *key);
        if (!list) return;
        BundleBytecode b;
        b.wheel_sha256 = w->sha256;
        b.key = key->name();
        b.filename = w->filename;
        b.path = dir_->path / (w->sha256 + "." + b.key);
        b.files = list->files.size();
        const store::BytecodeLayer l = store::write_bytecode_layer(store, *list, b.path);
        b.sha256 = l.sha256;
        b.size = l.size;
        out[i] = std::move(b);
    });
    for (auto& b : out)
        if (b) layers.push_back(std::move(*b));
}

BytecodeLayers::~BytecodeLayers() = default;

}  // namespace envbox::ops::fleet
