#include "envbox/env/interpreter.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/process.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

constexpr std::string_view kProbeFormat = "envbox-probe 3";

// Prints `key=value` lines; run with -I -S so no site customisation can interfere.
constexpr const char* kProbeScript = R"PY(
import os, sys, sysconfig, platform, importlib.util
def out(k, v): print(k + "=" + str(v).replace("\n", " "))
out("implementation", sys.implementation.name)
out("cache_tag", sys.implementation.cache_tag or "")
out("magic", importlib.util.MAGIC_NUMBER.hex())
out("major", sys.version_info[0]); out("minor", sys.version_info[1])
out("full_version", platform.python_version())
out("abiflags", getattr(sys, "abiflags", ""))
out("executable", os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable))
try: out("glibc", os.confstr("CS_GNU_LIBC_VERSION").split()[1])
except Exception: out("glibc", "")
scheme = "venv" if "venv" in sysconfig.get_scheme_names() else "posix_prefix"
v = {"base": "/@B", "platbase": "/@B", "installed_base": "/@B", "installed_platbase": "/@B"}
for k, p in sysconfig.get_paths(scheme, vars=v).items():
    if p.startswith("/@B"): out("scheme." + k, p[4:] if len(p) > 3 else ".")
iv = sys.implementation.version
ver = "%d.%d.%d" % (iv.major, iv.minor, iv.micro)
if iv.releaselevel != "final": ver += iv.releaselevel[0] + str(iv.serial)
m = {"implementation_name": sys.implementation.name, "implementation_version": ver,
     "os_name": os.name, "platform_machine": platform.machine(),
     "platform_release": platform.release(), "platform_system": platform.system(),
     "platform_version": platform.version(), "python_full_version": platform.python_version(),
     "platform_python_implementation": platform.python_implementation(),
     "python_version": ".".join(platform.python_version_tuple()[:2]), "sys_platform": sys.platform}
for k, val in m.items(): out("marker." + k, val)
inst = [sys.base_prefix, sys.base_exec_prefix]
try:
    import site
    b = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
         "installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix}
    p = sysconfig.get_paths(vars=b)
    inst += [p[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in p]
    inst += site.getsitepackages(inst[:2])
except Exception: pass
for p in inst: out("installation", p)
)PY";

Interpreter parse_probe(const std::string& text, const fs::path& path) {
    Interpreter in;
    // Bounds far above what the probe prints: a long platform_version still reads.
    kv::Reader r(text, path.string(), '=', {.max_line_bytes = 1u << 30, .max_lines = 1u << 30});
    while (auto line = r.next()) {
        if (!line->has_separator) continue;
        std::string k(line->key), v(line->value);
        if (k == "implementation")
            in.implementation = v;
        else if (k == "major")
            in.major = std::atoi(v.c_str());
        else if (k == "minor")
            in.minor = std::atoi(v.c_str());
        else if (k == "full_version")
            in.full_version = v;
        else if (k == "abiflags")
            in.abiflags = v;
        else if (k == "executable")
            in.executable = v;
        else if (k == "glibc")
            in.glibc = v;
        else if (k == "cache_tag")
            in.cache_tag = v;
        else if (k == "magic")
            in.magic = v;
        else if (k.starts_with("scheme."))
            in.scheme[k.substr(7)] = v;
        else if (k.starts_with("marker."))
            in.markers.set(k.substr(7), v);
        else if (k == "installation")
            in.installation.emplace_back(v);
    }
    if (in.major != 3 || in.full_version.empty() || in.executable.empty() ||
        !in.scheme.count("purelib") || !in.scheme.count("scripts"))
        throw Error(ErrorCode::generic, path.string() + " is not a usable Python 3 interpreter");
    return in;
}

}  // namespace

Interpreter probe_interpreter(const fs::path& path, const fs::path& cache_dir) {
    std::error_code ec;
    fs::path real = fs::canonical(path, ec);
    if (ec) throw sys_error("cannot resolve " + path.string(), ec);
    struct stat st {};
    if (::stat(real.c_str(), &st) != 0)
        throw Error(ErrorCode::generic, "cannot stat " + real.string(), errno);
    std::string key = std::string(kProbeFormat) + "\npath " + real.string() + "\nsize " +
                      std::to_string(st.st_size) + "\nmtime " + std::to_string(st.st_mtim.tv_sec) +
                      "." + std::to_string(st.st_mtim.tv_nsec) + "\n";
    fs::path cache = cache_dir / to_hex(sha256(real.string())).substr(0, 24);
    if (fs::exists(cache, ec)) {
        std::string text = read_file(cache);
        if (text.starts_with(key)) {
            try {
                return parse_probe(text.substr(key.size()), path);
            } catch (const Error&) {
                // stale or damaged: probe again
            }
        }
    }
    // Run the path as given: a venv's or pyenv shim's python must see its own pyvenv.cfg.
    auto r = run_capture({path.string(), "-I", "-S", "-c", kProbeScript});
    if (r.status != 0)
        throw Error(ErrorCode::generic, "probing " + path.string() + " failed (exit " +
                                            std::to_string(r.status) + "): " + r.err);
    Interpreter in = parse_probe(r.out, path);
    fs::create_directories(cache_dir, ec);
    if (!ec) {
        try {
            write_file_atomic(cache, key + r.out, 0644, Durability::none);
        } catch (const Error&) {
            // a read-only cache only costs a probe next time
        }
    }
    return in;
}

std::vector<fs::path> interpreter_candidates(int major, int minor,
                                             const InterpreterSearch& search) {
    std::vector<fs::path> out;
    std::set<std::string> seen;
    auto add = [&](const fs::path& p) {
        std::error_code ec;
        if (p.empty() || !fs::exists(p, ec) || fs::is_directory(p, ec)) return;
        if (seen.insert(p.string()).second) out.push_back(p);
    };
    if (!search.python.empty()) {
        out.emplace_back(search.python);
        return out;
    }
    const std::string xy = "python" + std::to_string(major) + "." + std::to_string(minor);
    const std::string x = "python" + std::to_string(major);
    std::vector<fs::path> path_dirs;
    {
        std::string_view rest(search.path);
        while (!rest.empty()) {
            auto colon = rest.find(':');
            std::string dir(rest.substr(0, colon));
            rest.remove_prefix(colon == std::string_view::npos ? rest.size() : colon + 1);
            if (!dir.empty()) path_dirs.emplace_back(dir);
        }
    }
    for (const auto& d : path_dirs)
        add(d / xy);
    for (const auto& d : path_dirs)
        add(d / x);
    for (const char* d : {"/usr/bin", "/usr/local/bin"}) {
        add(fs::path(d) / xy);
        add(fs::path(d) / x);
    }
    const std::string& home = search.home;
    auto scan = [&](const fs::path& root, const std::string& prefix) {
        std::error_code ec;
        if (!fs::is_directory(root, ec)) return;
        std::vector<fs::path> dirs;
        for (const auto& e : fs::directory_iterator(root, ec))
            if (e.path().filename().string().starts_with(prefix)) dirs.push_back(e.path());
        std::sort(dirs.rbegin(), dirs.rend());  // newest patch release first
        for (const auto& d : dirs)
            add(d / "bin" / xy);
    };
    const std::string ver = std::to_string(major) + "." + std::to_string(minor) + ".";
    if (!search.pyenv_root.empty())
        scan(fs::path(search.pyenv_root) / "versions", ver);
    else if (!home.empty())
        scan(fs::path(home) / ".pyenv" / "versions", ver);
    if (!search.uv_python_install_dir.empty())
        scan(fs::path(search.uv_python_install_dir), "cpython-" + ver);
    else if (!home.empty())
        scan(fs::path(home) / ".local" / "share" / "uv" / "python", "cpython-" + ver);
    return out;
}

Interpreter find_interpreter(int major, int minor, bool free_threaded, const fs::path& cache_dir,
                             const InterpreterSearch& search) {
    std::vector<std::string> found;
    for (const auto& candidate : interpreter_candidates(major, minor, search)) {
        try {
            Interpreter in = probe_interpreter(candidate, cache_dir);
            if (in.implementation == "cpython" && in.major == major && in.minor == minor &&
                in.free_threaded() == free_threaded)
                return in;
            found.push_back(candidate.string() + " (" + in.implementation + " " + in.full_version +
                            in.abiflags + ")");
        } catch (const Error& e) {
            found.push_back(candidate.string() + " (" + e.message() + ")");
        }
    }
    std::string want = "CPython " + std::to_string(major) + "." + std::to_string(minor) +
                       (free_threaded ? " (free-threaded)" : "");
    std::string msg = "no " + want + " interpreter found";
    if (!search.python.empty()) msg += " (ENVBOX_PYTHON is set, so only it was tried)";
    msg += found.empty() ? "; no Python interpreters were found at all" : "; found:";
    for (const auto& f : found)
        msg += "\n  " + f;
    msg += "\nInstall Python " + std::to_string(major) + "." + std::to_string(minor) +
           " (apt, pyenv or `uv python install`) or point ENVBOX_PYTHON at one.";
    throw Error(ErrorCode::invalid_input, msg);
}

Interpreter default_interpreter(const fs::path& cache_dir, const InterpreterSearch& search) {
    std::vector<std::string> found;
    for (const auto& candidate : interpreter_candidates(3, 0, search)) {
        if (candidate.filename() == "python3.0") continue;
        try {
            Interpreter in = probe_interpreter(candidate, cache_dir);
            if (in.implementation == "cpython") return in;
            found.push_back(candidate.string() + " (" + in.implementation + ")");
        } catch (const Error& e) {
            found.push_back(candidate.string() + " (" + e.message() + ")");
        }
    }
    std::string msg = "no CPython 3 interpreter found";
    for (const auto& f : found)
        msg += "\n  " + f;
    throw Error(ErrorCode::invalid_input,
                msg + "\nInstall Python 3 or point ENVBOX_PYTHON at one.");
}

}  // namespace envbox::env
