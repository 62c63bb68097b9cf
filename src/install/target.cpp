#include "envbox/install/target.hpp"

#include "envbox/util/error.hpp"

namespace envbox::install {

std::string Target::machine() const {
    return platform.ends_with("aarch64") ? "aarch64" : platform.ends_with("x86_64") ? "x86_64" : "";
}

namespace {

Target manifest_target(const lock::Manifest& manifest, const std::string& platform) {
    Target t;
    t.python_major = manifest.python_major;
    t.python_minor = manifest.python_minor;
    t.python_full_version =
        std::to_string(manifest.python_major) + "." + std::to_string(manifest.python_minor) + ".0";
    t.platform = platform;
    auto tags = pep::TargetTags::cpython(manifest.python_major, manifest.python_minor, platform);
    if (!tags) throw tags.error();
    t.tags = std::move(*tags);
    t.markers = pep::MarkerEnvironment::linux_cpython(t.python_full_version, t.machine());
    return t;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names)
        out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace

Target target_of_manifest(const lock::Manifest& manifest) {
    return manifest_target(manifest, manifest.platform);
}

std::vector<Target> targets_of_manifest(const lock::Manifest& manifest) {
    std::vector<Target> out;
    for (const auto& platform : manifest.platforms)
        out.push_back(manifest_target(manifest, platform));
    if (out.empty()) out.push_back(target_of_manifest(manifest));
    return out;
}

std::string target_marker(const Target& target) {
    return "platform_machine == '" + target.machine() + "'";
}

std::optional<std::string> platform_named(const std::vector<std::string>& platforms,
                                          const std::string& wanted) {
    for (const auto& p : platforms)
        if (p == wanted) return p;
    for (const auto& p : platforms)
        if (p.size() > wanted.size() && p.ends_with("_" + wanted)) return p;
    return std::nullopt;
}

std::string interpreter_platform(const env::Interpreter& interpreter, const std::string& env) {
    if (interpreter.glibc.empty())
        throw Error(ErrorCode::invalid_input,
                    "cannot tell this machine's platform (" + interpreter.executable.string() +
                        " reports no glibc); write manifests/" + env + ".toml with a platform");
    auto m = interpreter.markers.values.find("platform_machine");
    std::string machine = m != interpreter.markers.values.end() ? m->second : "x86_64";
    std::string glibc = interpreter.glibc;
    for (auto& c : glibc)
        if (c == '.') c = '_';
    return "manylinux_" + glibc + "_" + machine;
}

Target target_of_interpreter(env::Interpreter interpreter, const std::string& platform,
                             const std::string& env) {
    Target t;
    t.platform = platform.empty() ? interpreter_platform(interpreter, env) : platform;
    auto tags = pep::TargetTags::cpython(interpreter.major, interpreter.minor, t.platform,
                                         interpreter.free_threaded());
    if (!tags) throw tags.error();
    t.tags = std::move(*tags);
    t.python_major = interpreter.major;
    t.python_minor = interpreter.minor;
    t.python_full_version = interpreter.full_version;
    t.markers = interpreter.markers;
    t.interpreter = std::move(interpreter);
    return t;
}

Target lock_target(const lock::LockFile& lock, const std::string& target) {
    const std::filesystem::path& path = lock.path;
    const lock::ToolTable tool = lock.tool.value_or(lock::ToolTable{});
    std::vector<std::string> platforms = tool.platforms;
    if (platforms.empty() && !tool.platform.empty()) platforms.push_back(tool.platform);
    auto named = platform_named(platforms, target);
    if (!named)
        throw Error(ErrorCode::usage,
                    "--target " + target + ": " + path.string() +
                        (platforms.empty() ? " records no targets (it was not written by envbox)"
                                           : " is locked for " + joined(platforms) + " only"));
    lock::Manifest m;  // the python line alone: "3.12"
    const std::string& python = tool.python;
    const auto dot = python.find('.');
    try {
        m.python_major = std::stoi(python.substr(0, dot));
        m.python_minor = std::stoi(python.substr(dot + 1));
    } catch (const std::exception&) {
        throw Error(ErrorCode::invalid_input, path.string() + ": [tool.envbox] python '" + python +
                                                  "' is not a CPython line such as 3.12");
    }
    return manifest_target(m, *named);
}

lock::Pylock lock_for_target(const lock::LockFile& lock, const std::string& target) {
    const Target t = lock_target(lock, target);
    auto filtered = lock::for_target(lock.pylock, t.markers);
    if (!filtered) throw filtered.error();
    return std::move(*filtered);
}

std::string platform_for_host(const lock::Manifest& manifest, const std::string& host,
                              const std::string& wanted, const std::string& env) {
    const std::vector<std::string>& covered = manifest.platforms;
    if (!wanted.empty()) {
        if (auto named = platform_named(covered, wanted)) return *named;
        throw Error(ErrorCode::usage, "--target " + wanted + ": manifests/" + env +
                                          ".toml locks for " + joined(covered) + " only");
    }
    // One target is built wherever create runs, as the manifest says; of several, this
    // machine's.
    if (covered.size() <= 1) return manifest.platform;
    Target probe;
    probe.platform = host;
    if (auto named = platform_named(covered, probe.machine())) return *named;
    throw Error(ErrorCode::invalid_input,
                "this machine is " + host + "; manifests/" + env + ".toml locks for " +
                    joined(covered) +
                    " only (add its platform to `platforms`, or create with "
                    "--target)");
}

Target create_target(const lock::Manifest* manifest, const std::filesystem::path& probe_cache,
                     const std::string& env, const env::InterpreterSearch& search,
                     const std::string& platform) {
    env::Interpreter interpreter =
        manifest ? env::find_interpreter(manifest->python_major, manifest->python_minor, false,
                                         probe_cache, search)
                 : env::default_interpreter(probe_cache, search);
    std::string chosen = platform;
    if (manifest)
        chosen = platform_for_host(*manifest,
                                   platform.empty() && manifest->platforms.size() > 1
                                       ? interpreter_platform(interpreter, env)
                                       : "",
                                   platform, env);
    Target t = target_of_interpreter(std::move(interpreter), chosen, env);
    // A target named for another machine is selected as that machine: its markers say so.
    if (const std::string machine = t.machine(); !platform.empty() && !machine.empty())
        t.markers.values["platform_machine"] = machine;
    return t;
}

}  // namespace envbox::install
