#include "envbox/ops/doctor.hpp"

#include <fcntl.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "envbox/env/cuda.hpp"
#include "envbox/env/interpreter.hpp"
#include "envbox/env/sandbox.hpp"
#include "envbox/index/http.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

std::string fs_name(long type) {
    switch (static_cast<unsigned long>(type)) {
        case 0xEF53:
            return "ext4";
        case 0x9123683E:
            return "btrfs";
        case 0x58465342:
            return "xfs";
        case 0x01021994:
            return "tmpfs";
        case 0x794C7630:
            return "overlayfs";
        case 0x6969:
            return "nfs";
        case 0x65735546:
            return "fuse";
        case 0x2FC12FC1:
            return "zfs";
        default: {
            char buf[32];
            std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(type));
            return buf;
        }
    }
}

// A `file://` URL's path (`file:///srv/idx`, `file://localhost/srv/idx`), %XX decoded.
std::string file_url_path(const std::string& url) {
    std::string rest = url.substr(7);
    if (rest.starts_with("localhost/")) rest.erase(0, 9);
    std::string out;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] == '%' && i + 2 < rest.size() &&
            std::isxdigit(static_cast<unsigned char>(rest[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(rest[i + 2]))) {
            out += static_cast<char>(std::stoi(rest.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += rest[i];
        }
    }
    return out;
}

// Tries one index: HTTP(S) by fetching its base page (any answer is reachable: an index may
// refuse a listing it does not serve), `file://` as a path that exists and can be read.
void try_index(index::HttpClient& http, const resolve::IndexConfig& i, DoctorReport::Index& out) {
    if (i.url.starts_with("file://")) {
        const std::string path = file_url_path(i.url);
        std::error_code ec;
        const bool dir = fs::is_directory(path, ec);
        if (!fs::exists(path, ec)) {
            out.status = "NOT readable: " + path + " does not exist";
        } else if (::access(path.c_str(), dir ? (R_OK | X_OK) : R_OK) != 0) {
            out.status = "NOT readable: " + path + ": " + std::strerror(errno);
        } else {
            out.ok = true;
            out.status = std::string("readable (") + (dir ? "directory" : "file") + ")";
        }
        return;
    }
    try {
        auto resp = http.get({i.url + "/", {}, i.ca, std::nullopt, std::nullopt, false});
        out.ok = true;
        out.status = "reachable (HTTP " + std::to_string(resp.status) + ")";
    } catch (const Error& err) {
        out.status = "NOT reachable: " + err.message();
    }
}

// The CUDA lines a manifest's environment runs: its `cuda = "X.Y"` and its lock's packages.
std::vector<env::CudaLine> cuda_lines_of(const lock::Manifest& m, const fs::path& lock_path) {
    std::vector<env::CudaLine> lines;
    if (m.cuda) {
        env::CudaLine l;
        l.major = std::atoi(m.cuda->c_str());
        if (auto dot = m.cuda->find('.'); dot != std::string::npos)
            l.minor = std::atoi(m.cuda->c_str() + dot + 1);
        lines.push_back(l);
    }
    std::error_code ec;
    if (fs::exists(lock_path, ec))
        if (auto lock = lock::Pylock::parse(read_input_file(lock_path), lock_path.string()))
            for (const auto& p : lock->packages)
                if (p.version)
                    if (auto l = env::cuda_line_of(p.name, *p.version)) lines.push_back(*l);
    return lines;
}

// Each manifest of the project: it reads as every command reads it, the driver can run its
// newest CUDA line, and each index it names answers. Findings go into `r`, the broken ones into
// r.problems as well.
void check_project(const Context& ctx, DoctorReport& r) {
    std::error_code ec;
    const fs::path dir = ctx.project().manifests();
    if (ctx.project_root.empty() || !fs::is_directory(dir, ec)) return;
    std::vector<fs::path> manifests;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        std::string n = e.path().filename().string();
        if (n.ends_with(".toml") && !n.starts_with("pylock.")) manifests.push_back(e.path());
    }
    std::sort(manifests.begin(), manifests.end());
    index::HttpClient http(http_options(ctx, false));
    std::map<std::string, std::size_t> by_url;  // index URL → its entry in r.indexes
    for (const auto& path : manifests) {
        DoctorReport::Environment env;
        env.name = path.stem().string();
        try {
            env.lock = lock_agreement(ctx, env.name);
        } catch (const Error&) {
            // a link planted in the home: every command on this environment refuses it
        }
        std::optional<lock::Manifest> m;
        std::vector<resolve::IndexConfig> indexes;  // as this machine reaches them (its mirrors)
        try {
            // Read as lock and create read it: a manifest they refuse (an index URL with a
            // password, a bad mirror variable) is this environment's problem, and none of its
            // indexes is asked.
            m = read_manifest(path);
            indexes = index_configs(*m, path, ctx.settings);
        } catch (const Error& e) {
            env.ok = false;
            env.problem = e.message();
            r.problems.push_back(env.name + ": " + env.problem);
            r.environments.push_back(std::move(env));
            continue;
        }
        auto lines = cuda_lines_of(*m, ctx.project().lock(env.name));
        std::set<std::string> shown;
        for (const auto& l : lines)
            if (shown.insert(std::to_string(l.major) + ".x").second)
                env.cuda_lines.push_back(std::to_string(l.major) + ".x");
        if (!lines.empty() && r.driver) {
            env::CudaLine newest = lines.front();
            for (const auto& l : lines)
                if (l.major > newest.major) newest = l;
            if (auto why = env::driver_refuses(*r.driver, newest)) {
                env.ok = false;
                env.problem = *why;
                r.problems.push_back("the NVIDIA driver cannot run " + env.name + ": " + *why);
            }
        }
        for (const auto& i : indexes) {
            auto [it, fresh] = by_url.try_emplace(i.url, r.indexes.size());
            if (fresh) {
                DoctorReport::Index out;
                out.name = i.name;
                out.url = index::redact_url(i.url);
                out.via = i.mirror_variable;
                try_index(http, i, out);
                if (!out.ok)
                    r.problems.push_back("index " + out.name + i.mirror_note() + " " + out.url +
                                         " " + out.status);
                r.indexes.push_back(std::move(out));
            }
            auto& named = r.indexes[it->second].environments;
            if (named.empty() || named.back() != env.name) named.push_back(env.name);
        }
        r.environments.push_back(std::move(env));
    }
}
}  // namespace

DoctorReport doctor(const Context& ctx) {
    DoctorReport r;
    std::set<std::string> seen;
    for (int minor = 8; minor <= 14; ++minor)
        for (const auto& c :
             env::interpreter_candidates(3, minor, interpreter_search(ctx.settings))) {
            if (c.filename() != "python3." + std::to_string(minor)) continue;
            try {
                auto in = env::probe_interpreter(c, store::Home(ctx.home).interpreters());
                if (in.minor == minor && seen.insert(in.executable.string()).second)
                    r.interpreters.push_back(in.full_version + in.abiflags + "  " + c.string());
            } catch (const Error&) {
            }
        }
    r.driver = env::nvidia_driver_version(ctx.settings.cuda_driver);
    if (r.driver)
        r.driver_source = ctx.settings.cuda_driver.empty() ? "installed" : "ENVBOX_CUDA_DRIVER";
    if (r.driver)
        for (int major : {12, 13})
            if (!env::driver_refuses(*r.driver, env::CudaLine{major, std::nullopt}))
                r.cuda_lines.push_back(std::to_string(major) + ".x");

    store::Store store(ctx.home);
    r.store_path = store.root().string();
    struct statfs sf {};
    if (::statfs(store.root().c_str(), &sf) == 0)
        r.store_filesystem = fs_name(static_cast<long>(sf.f_type));
    struct statvfs sv {};
    if (::statvfs(store.root().c_str(), &sv) == 0)
        r.store_free = static_cast<unsigned long long>(sv.f_bavail) * sv.f_frsize;
    // What placing a file gives here, tried for real between the store's temp directory and itself.
    fs::path probe = store.tmp_dir() / ("doctor-" + std::to_string(::getpid()));
    fs::path placed = probe;
    placed += ".placed";
    try {
        write_file_atomic(probe, "envbox", 0444, Durability::none);
        r.link_mode = link_mode_name(place_file(probe, placed, LinkMode::hardlink, 0444));
        fs::path cloned = probe;
        cloned += ".clone";
        if (place_file(probe, cloned, LinkMode::reflink, 0444) == LinkMode::reflink)
            r.link_mode += " (reflinks work too)";
        std::error_code ec;
        fs::remove(cloned, ec);
        // How new objects are stored: renameat2 RENAME_NOREPLACE, or a link where it is missing.
        fs::path stored = probe;
        stored += ".stored";
        NoReplaceMethod how{};
        int err = rename_noreplace_at(AT_FDCWD, placed.c_str(), AT_FDCWD, stored.c_str(), &how);
        r.link_mode += std::string("; atomic no-replace rename: ") +
                       (err ? std::strerror(err) : no_replace_method_name(how));
        fs::remove(stored, ec);
        if (r.store_filesystem == "overlayfs")
            r.link_mode += "; overlayfs copies an image layer's object up when it is linked";
    } catch (const Error& e) {
        r.link_mode = "unknown: " + e.message();
    }
    std::error_code ec;
    fs::remove(probe, ec);
    fs::remove(placed, ec);

    // Before any HTTP: the probe forks, and a user namespace needs a single-threaded process.
    env::SandboxOutcome sandbox = env::probe_sandbox({ctx.home, {}});
    r.sandbox = env::describe(sandbox);
    r.sandboxed = sandbox.kind != env::SandboxKind::none;

    check_project(ctx, r);
    // A problem for a project's environments (`run` would go unsandboxed); outside a project
    // doctor only describes the machine.
    if (!r.sandboxed && !r.environments.empty())
        r.problems.insert(r.problems.begin(), "no sandbox possible here: " + r.sandbox);
    return r;
}

}  // namespace envbox::ops
