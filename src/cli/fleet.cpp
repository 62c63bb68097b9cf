// envbox push ENV REF, pull REF [ENV], pack ENV -o FILE, unpack FILE [ENV]
#include "envbox/ops/fleet.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/text.hpp"

namespace fs = std::filesystem;

namespace envbox::cli {
namespace {

// The registry options every registry command takes.
struct RegistryFlags {
    bool plain_http = false;
    std::string ca;
};

std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// --plain-http and --ca, the credentials of ENVBOX_REGISTRY_USERNAME / _PASSWORD when set, else
// the docker config ($DOCKER_CONFIG/config.json, else ~/.docker/config.json) the ops layer reads.
ops::RegistryAccess registry_access(const RegistryFlags& flags) {
    ops::RegistryAccess a;
    a.plain_http = flags.plain_http;
    a.ca_file = flags.ca;
    const std::string user = env_or_empty("ENVBOX_REGISTRY_USERNAME");
    const std::string password = env_or_empty("ENVBOX_REGISTRY_PASSWORD");
    if (!user.empty() || !password.empty())
        a.credentials = index::oci::RegistryCredentials{user, password};
    a.mirrors = env_or_empty("ENVBOX_REGISTRY_MIRROR");
    if (const std::string dir = env_or_empty("DOCKER_CONFIG"); !dir.empty())
        a.docker_config = fs::path(dir) / "config.json";
    else if (const std::string home = env_or_empty("HOME"); !home.empty())
        a.docker_config = fs::path(home) / ".docker" / "config.json";
    if (const std::string chunk = env_or_empty("ENVBOX_REGISTRY_CHUNK_BYTES");
        !chunk.empty() && chunk.find_first_not_of("0123456789") == std::string::npos)
        a.chunk_bytes = std::strtoull(chunk.c_str(), nullptr, 10);
    return a;
}

void add_registry_flags(CLI::App* c, RegistryFlags& flags) {
    c->add_flag("--plain-http", flags.plain_http,
                "Talk to the registry over http:// (a registry on loopback); default https://");
    c->add_option("--ca", flags.ca,
                  "CA bundle to verify the registry's TLS with (default: SSL_CERT_FILE, else the "
                  "system's)");
}

struct ReceiveFlags {
    std::string link_mode;
    bool no_compile = false;
    std::string lock;                ///< --lock FILE: the reviewed lock
    bool update_lock = false;        ///< --update-lock
    bool ignore_bytecode = false;    ///< --ignore-bytecode
    bool allow_cuda_change = false;  ///< --allow-cuda-change
};

void add_receive_flags(CLI::App* c, ReceiveFlags& flags) {
    c->add_option("--link-mode", flags.link_mode, "hardlink, reflink or copy")
        ->check(CLI::IsMember({"hardlink", "reflink", "copy"}));
    c->add_flag("--no-compile", flags.no_compile, "Link no .pyc files");
    c->add_option("--lock", flags.lock,
                  "The reviewed lock: refuse (exit 5) an artifact whose lock is not this file's "
                  "bytes (default: manifests/pylock.ENV.toml when it exists)");
    c->add_flag("--update-lock", flags.update_lock,
                "Take the artifact's lock over a different manifests/pylock.ENV.toml");
    c->add_flag("--ignore-bytecode", flags.ignore_bytecode,
                "Take none of the artifact's .pyc files and compile here (run no code the "
                "reviewed lock does not pin)");
    c->add_flag("--allow-cuda-change", flags.allow_cuda_change,
                "Let the artifact's lock move an existing ENV to another CUDA line (refused "
                "otherwise, with the change list)");
}

ops::ReceiveOptions receive_options(const std::string& env, const ReceiveFlags& flags) {
    ops::ReceiveOptions o;
    o.env = env;
    if (flags.link_mode == "reflink")
        o.link_mode = LinkMode::reflink;
    else if (flags.link_mode == "copy")
        o.link_mode = LinkMode::copy;
    if (flags.no_compile) o.compile = false;
    if (!flags.lock.empty()) o.trusted_lock = fs::absolute(flags.lock);
    o.update_lock = flags.update_lock;
    o.ignore_bytecode = flags.ignore_bytecode;
    o.allow_cuda_change = flags.allow_cuda_change;
    if (o.trusted_lock && o.update_lock)
        throw Error(ErrorCode::usage, "--lock FILE and --update-lock contradict each other");
    return o;
}

void report_received(const GlobalOptions& global, const char* verb, const std::string& from,
                     const ops::ReceiveResult& r) {
    if (global.json) {
        Json report = {{"environment", r.env},
                       {"from", from},
                       {"lock", r.lock_path.string()},
                       {"wheels", r.wheels},
                       {"fetched", r.fetched},
                       {"present", r.present},
                       {"bytes", r.bytes},
                       {"bytecode_layers", r.bytecode_layers},
                       {"pyc_received", r.pyc_received},
                       {"compiled", r.compiled},
                       {"generation", r.create.generation},
                       {"changed", r.create.changed},
                       {"seconds", r.seconds}};
        if (!r.manifest_digest.empty()) report["digest"] = r.manifest_digest;
        if (!r.mirror.empty()) report["mirror"] = r.mirror;
        std::printf("%s\n", json_line(report).c_str());
        return;
    }
    if (global.verbosity < 0) return;
    if (!r.mirror_failed.empty())
        std::fprintf(stderr, "note: %s; pulled from the registry itself\n",
                     r.mirror_failed.c_str());
    if (!r.mirror.empty()) std::fprintf(stderr, "through the mirror %s\n", r.mirror.c_str());
    std::fprintf(stderr, "%s %s: %s (%zu fetched, %zu already stored, %s)\n", verb, from.c_str(),
                 counted(r.wheels, "wheel", "wheels").c_str(), r.fetched, r.present,
                 human_bytes(r.bytes).c_str());
    if (global.verbosity > 0 && r.create.changed)
        std::fprintf(stderr, "Bytecode: %s taken from %s the artifact carried; %s compiled here\n",
                     counted(r.pyc_received, ".pyc file", ".pyc files").c_str(),
                     counted(r.bytecode_layers, "layer", "layers").c_str(),
                     counted(r.compiled, "module", "modules").c_str());
    // A pull fetches its blobs inside create's fetch+ingest; unpack receives them first.
    if (global.verbosity > 1 && r.create.changed) {
        std::fprintf(stderr, "  seconds: ");
        if (r.receive_s > 0) std::fprintf(stderr, "receive %.3f; ", r.receive_s);
        std::fprintf(stderr,
                     "create: select %.3f, fetch+ingest %.3f, publish %.3f, install %.3f, seal "
                     "%.3f, commit %.3f, link check %.3f\n",
                     r.create.select_s, r.create.fetch.ingest_s, r.create.fetch.publish_s,
                     r.create.build.install_s, r.create.build.seal_s, r.create.build.commit_s,
                     r.create.link.seconds);
        std::string line;
        char at[64];
        for (const auto& f : r.create.fetch.last_stored) {
            std::snprintf(at, sizeof at, " %.2f s", f.stored_at);
            line += (line.empty() ? "" : "; ") + f.package + at;
            std::snprintf(at, sizeof at, " (its bytecode %.2f s)", f.compiled_at);
            if (f.compiled_at > 0) line += at;
        }
        if (!line.empty())
            std::fprintf(stderr, "  stored last: %s (seconds into fetch+ingest)\n", line.c_str());
    }
    if (r.create.changed)
        std::fprintf(stderr, "Installed %s into %s generation %d in %.2f s (lock %s)\n",
                     counted(r.create.packages, "package", "packages").c_str(), r.env.c_str(),
                     r.create.generation, r.seconds, r.lock_path.c_str());
    else
        std::fprintf(stderr, "%s is up to date (generation %d); lock %s\n", r.env.c_str(),
                     r.create.generation, r.lock_path.c_str());
}

struct PushCommand {
    std::string env, ref;
    RegistryFlags registry;
    bool no_bytecode = false;
};

void run_push(const GlobalOptions& global, const PushCommand& cmd) {
    ConsoleProgress progress(global.verbosity, stderr_is_tty());
    ops::Context ctx = make_context(global, progress);
    ops::PushOptions o;
    o.env = cmd.env;
    o.ref = cmd.ref;
    o.access = registry_access(cmd.registry);
    o.bytecode = !cmd.no_bytecode;
    ops::PushResult r = ops::push(ctx, o);
    progress.clear();
    if (global.json) {
        Json report = {{"environment", cmd.env},      {"ref", r.ref},
                       {"digest", r.manifest_digest}, {"wheels", r.wheels},
                       {"uploaded", r.uploaded},      {"present", r.present},
                       {"mounted", r.mounted},        {"resumed", r.resumed},
                       {"refetched", r.refetched},    {"bytecode_layers", r.bytecode_layers},
                       {"pyc_files", r.pyc_files},    {"bytes", r.bytes_uploaded},
                       {"seconds", r.seconds}};
        std::printf("%s\n", json_line(report).c_str());
    } else if (global.verbosity >= 0) {
        std::fprintf(stderr,
                     "Pushed %s to %s: %s; %s uploaded (%s), %zu already there, %zu mounted, in "
                     "%.2f s\n  %s\n",
                     cmd.env.c_str(), r.ref.c_str(), counted(r.wheels, "wheel", "wheels").c_str(),
                     counted(r.uploaded, "blob", "blobs").c_str(),
                     human_bytes(r.bytes_uploaded).c_str(), r.present, r.mounted, r.seconds,
                     r.manifest_digest.c_str());
        if (r.bytecode_layers > 0)
            std::fprintf(stderr, "  with %s of %s\n",
                         counted(r.bytecode_layers, "bytecode layer", "bytecode layers").c_str(),
                         counted(r.pyc_files, ".pyc file", ".pyc files").c_str());
        if (r.refetched > 0)
            std::fprintf(stderr, "  %s fetched again by the lock's URL and kept in the store\n",
                         counted(r.refetched, "wheel was", "wheels were").c_str());
    }
}

struct PullCommand {
    std::string ref, env;
    RegistryFlags registry;
    ReceiveFlags receive;
};

void run_pull(const GlobalOptions& global, const PullCommand& cmd) {
    ConsoleProgress progress(global.verbosity, stderr_is_tty());
    ops::Context ctx = make_context(global, progress);
    ops::PullOptions o;
    o.ref = cmd.ref;
    o.receive = receive_options(cmd.env, cmd.receive);
    o.receive.retry = "envbox pull " + shell_word(cmd.ref) +
                      (cmd.env.empty() ? "" : " " + cmd.env) +
                      (cmd.receive.update_lock ? " --update-lock" : "");
    o.access = registry_access(cmd.registry);
    ops::ReceiveResult r = ops::pull(ctx, o);
    progress.clear();
    report_received(global, "Pulled", cmd.ref, r);
}

struct PackCommand {
    std::string env, output;
    bool zstd = false, no_zstd = false, no_bytecode = false;
    std::string format = "envbox";
};

void run_pack(const GlobalOptions& global, const PackCommand& cmd) {
    ConsoleProgress progress(global.verbosity, stderr_is_tty());
    ops::Context ctx = make_context(global, progress);
    ops::PackOptions o;
    o.env = cmd.env;
    o.output = cmd.output;
    if (cmd.zstd) o.zstd = true;
    if (cmd.no_zstd) o.zstd = false;
    o.bytecode = !cmd.no_bytecode;
    if (cmd.format == "oci")
        o.format = ops::PackFormat::oci;
    else if (cmd.format == "oci-dir")
        o.format = ops::PackFormat::oci_dir;
    ops::PackResult r = ops::pack(ctx, o);
    progress.clear();
    if (global.json) {
        Json report = {{"environment", cmd.env},   {"output", r.output.string()},
                       {"format", cmd.format},     {"wheels", r.wheels},
                       {"refetched", r.refetched}, {"bytecode_layers", r.bytecode_layers},
                       {"pyc_files", r.pyc_files}, {"bytes", r.bytes},
                       {"seconds", r.seconds}};
        std::printf("%s\n", json_line(report).c_str());
    } else if (global.verbosity >= 0) {
        std::fprintf(stderr, "Packed %s into %s: %s, %s and its lock, %s, in %.2f s\n",
                     cmd.env.c_str(), r.output.c_str(),
                     counted(r.wheels, "wheel", "wheels").c_str(),
                     counted(r.pyc_files, ".pyc file", ".pyc files").c_str(),
                     human_bytes(r.bytes).c_str(), r.seconds);
    }
}

struct UnpackCommand {
    std::string file, env;
    ReceiveFlags receive;
};

void run_unpack(const GlobalOptions& global, const UnpackCommand& cmd) {
    ConsoleProgress progress(global.verbosity, stderr_is_tty());
    ops::Context ctx = make_context(global, progress);
    ops::UnpackOptions o;
    o.archive = cmd.file;
    o.receive = receive_options(cmd.env, cmd.receive);
    o.receive.retry =
        "envbox unpack " + shell_word(cmd.file) + (cmd.env.empty() ? "" : " " + cmd.env);
    ops::ReceiveResult r = ops::unpack(ctx, o);
    progress.clear();
    report_received(global, "Unpacked", cmd.file, r);
}

}  // namespace

void create_from_registry(const GlobalOptions& global, const CreateFrom& from) {
    PullCommand cmd;
    cmd.ref = from.ref;
    cmd.env = from.env;
    cmd.registry = {from.plain_http, from.ca};
    cmd.receive = {from.link_mode,   from.no_compile,      from.lock,
                   from.update_lock, from.ignore_bytecode, from.allow_cuda_change};
    run_pull(global, cmd);
}

void register_push(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<PushCommand>();
    CLI::App* c = app.add_subcommand(
        "push", "Upload ENV's current generation (its wheels and lock) to an OCI registry");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("REF", cmd->ref,
                  "REGISTRY/REPOSITORY[:TAG], e.g. registry.example:5000/team/train-cu128:v3 "
                  "(default tag: lock-<16 hex digits of the lock's sha256>)")
        ->required();
    add_registry_flags(c, cmd->registry);
    c->add_flag("--no-bytecode", cmd->no_bytecode,
                "Send no .pyc files (every node then compiles the stack itself)");
    c->footer(
        "Each wheel is one blob, its digest the lock's sha256; blobs the repository has are "
        "skipped (HEAD), blobs of the repository this home last pushed to on that registry are "
        "mounted, the rest uploaded (in chunks above 64 MiB). Wheels the store keeps no "
        "archive of are fetched again by the lock's URL, checked, and kept. Credentials: "
        "ENVBOX_REGISTRY_USERNAME/_PASSWORD, else docker's config.json `auths`. The store's "
        ".pyc files go too, one blob per wheel and interpreter, so a node that pulls links them "
        "instead of compiling.");
    c->callback([&global, cmd] { run_push(global, *cmd); });
}

void register_pull(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<PullCommand>();
    CLI::App* c = app.add_subcommand(
        "pull", "Build an environment from an OCI registry's artifact, with no index asked");
    c->add_option("REF", cmd->ref, "REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:…")
        ->required();
    c->add_option("ENV", cmd->env, "Environment (default: the repository's last component)");
    add_registry_flags(c, cmd->registry);
    add_receive_flags(c, cmd->receive);
    c->footer(
        "Every wheel blob is checked against its digest and the lock's sha256 and size; blobs "
        "the store holds are not fetched. The lock is written as manifests/pylock.ENV.toml (the "
        "current directory becomes the project when there is none), where `envbox diff` reads "
        "it, and the generation is built from it as `create --frozen --offline` builds one. An "
        "artifact whose lock is not the reviewed one (manifests/pylock.ENV.toml when it exists, "
        "or --lock FILE) is refused, exit 5, before anything is fetched. "
        "ENVBOX_REGISTRY_MIRROR=REGISTRY=http(s)://HOST[,…] asks a mirror (a pull-through "
        "cache) first, and the registry when the mirror cannot answer. The artifact's .pyc "
        "files are checked against the wheels they belong to and linked; only what they lack "
        "is compiled here (all of it with --ignore-bytecode).");
    c->callback([&global, cmd] { run_pull(global, *cmd); });
}

void register_pack(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<PackCommand>();
    CLI::App* c = app.add_subcommand(
        "pack", "Write ENV's current generation (lock and wheels) into one tar file");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("-o,--output", cmd->output, "The file to write (FILE.tar, FILE.tar.zst)")
        ->required();
    c->add_flag("--zstd", cmd->zstd, "zstd-compress (default: when FILE ends in .zst or .tzst)");
    c->add_flag("--no-zstd", cmd->no_zstd, "Never compress");
    c->add_flag("--no-bytecode", cmd->no_bytecode, "Pack no .pyc files");
    c->add_option("--format", cmd->format,
                  "envbox (default: envbox's tar), oci (an OCI image layout as a tar, what "
                  "`skopeo copy oci-archive:FILE docker://…` reads) or oci-dir (the layout as a "
                  "folder, skopeo's `oci:DIR`)")
        ->check(CLI::IsMember({"envbox", "oci", "oci-dir"}));
    c->footer(
        "Members: pylock.toml first, then wheels/<file name> for every wheel, byte for "
        "byte, then bytecode/<wheel sha256>.<key> with the store's .pyc files. --format oci "
        "writes instead the manifest and blobs `envbox push` sends (oci-layout, index.json, "
        "blobs/sha256/…), which skopeo or oras load into any registry. `envbox unpack "
        "FILE` builds the environment from it on a machine with no "
        "network.");
    c->callback([&global, cmd] { run_pack(global, *cmd); });
}

void register_unpack(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<UnpackCommand>();
    CLI::App* c = app.add_subcommand(
        "unpack", "Build an environment from a file `envbox pack` wrote, offline");
    c->add_option("FILE", cmd->file,
                  "The pack file (tar, zstd or not), or an OCI image layout (a tar or a folder: "
                  "`pack --format oci`, `skopeo copy docker://… oci-archive:FILE`)")
        ->required();
    c->add_option("ENV", cmd->env, "Environment (default: FILE's name up to its first '.')");
    add_receive_flags(c, cmd->receive);
    c->footer(
        "Refused before anything is stored (exit 5): links and other non-regular members, "
        "absolute or `..` names, members the lock does not name, members larger than the lock "
        "says, wheels whose sha256 is not the lock's. The lock is written as "
        "manifests/pylock.ENV.toml, as `pull` writes it.");
    c->callback([&global, cmd] { run_unpack(global, *cmd); });
}

}  // namespace envbox::cli
