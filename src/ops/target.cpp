#include "envbox/ops/target.hpp"

#include "envbox/util/error.hpp"

namespace envbox::ops {

std::string Target::machine() const {
    return platform.ends_with("aarch64") ? "aarch64" : platform.ends_with("x86_64") ? "x86_64" : "";
}

Target target_of_manifest(const lock::Manifest& manifest) {
    Target t;
    t.python_major = manifest.python_major;
    t.python_minor = manifest.python_minor;
    t.python_full_version =
        std::to_string(manifest.python_major) + "." + std::to_string(manifest.python_minor) + ".0";
    t.platform = manifest.platform;
    auto tags = manifest.target_tags();
    if (!tags) throw tags.error();
    t.tags = std::move(*tags);
    t.markers = pep::MarkerEnvironment::linux_cpython(t.python_full_version, t.machine());
    return t;
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

Target create_target(const lock::Manifest* manifest, const std::filesystem::path& probe_cache,
                     const std::string& env, const env::InterpreterSearch& search) {
    if (!manifest)
        return target_of_interpreter(env::default_interpreter(probe_cache, search), "", env);
    return target_of_interpreter(
        env::find_interpreter(manifest->python_major, manifest->python_minor, false, probe_cache,
                              search),
        manifest->platform, env);
}

}  // namespace envbox::ops
