#include "envbox/ops/doctor.hpp"

#include <fcntl.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "envbox/env/cuda.hpp"
#include "envbox/env/interpreter.hpp"
#include "envbox/env/sandbox.hpp"
#include "envbox/index/http.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

std::string fs_name(long type) {
    switch (static_cast<unsigned long>(type)) {
        case 0xEF53: return "ext4";
        case 0x9123683E: return "btrfs";
        case 0x58465342: return "xfs";
        case 0x01021994: return "tmpfs";
        case 0x794C7630: return "overlayfs";
        case 0x6969: return "nfs";
        case 0x65735546: return "fuse";
        case 0x2FC12FC1: return "zfs";
        default: {
            char buf[32];
            std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(type));
            return buf;
        }
    }
}

}  // namespace

DoctorReport doctor(const Context& ctx) {
    DoctorReport r;
    std::set<std::string> seen;
    for (int minor = 8; minor <= 14; ++minor)
        for (const auto& c : env::interpreter_candidates(3, minor)) {
            if (c.filename() != "python3." + std::to_string(minor)) continue;
            try {
                auto in = env::probe_interpreter(c, ctx.home / "cache" / "interpreters");
                if (in.minor == minor && seen.insert(in.executable.string()).second)
                    r.interpreters.push_back(in.full_version + in.abiflags + "  " + c.string());
            } catch (const Error&) {
            }
        }
    r.driver = env::nvidia_driver_version();
    if (r.driver)
        for (int major : {12, 13})
            if (!env::driver_refuses(*r.driver, env::CudaLine{major, std::nullopt})) r.cuda_lines.push_back(std::to_string(major) + ".x");

    store::Store store(ctx.home);
    r.store_path = store.root().string();
    struct statfs sf {};
    if (::statfs(store.root().c_str(), &sf) == 0) r.store_filesystem = fs_name(static_cast<long>(sf.f_type));
    struct statvfs sv {};
    if (::statvfs(store.root().c_str(), &sv) == 0) r.store_free = static_cast<unsigned long long>(sv.f_bavail) * sv.f_frsize;
    // What placing a file gives here, tried for real between the store's temp directory and itself.
    fs::path probe = store.tmp_dir() / ("doctor-" + std::to_string(::getpid()));
    fs::path placed = probe;
    placed += ".placed";
    try {
        write_file_atomic(probe, "envbox", 0444, Durability::none);
        r.link_mode = link_mode_name(place_file(probe, placed, LinkMode::hardlink, 0444));
        fs::path cloned = probe;
        cloned += ".clone";
        if (place_file(probe, cloned, LinkMode::reflink, 0444) == LinkMode::reflink) r.link_mode += " (reflinks work too)";
        std::error_code ec;
        fs::remove(cloned, ec);
        // How new objects are stored: renameat2 RENAME_NOREPLACE, or a link where it is missing.
        fs::path stored = probe;
        stored += ".stored";
        NoReplaceMethod how{};
        int err = rename_noreplace_at(AT_FDCWD, placed.c_str(), AT_FDCWD, stored.c_str(), &how);
        r.link_mode += std::string("; atomic no-replace rename: ") + (err ? std::strerror(err) : no_replace_method_name(how));
        fs::remove(stored, ec);
        if (r.store_filesystem == "overlayfs") r.link_mode += "; overlayfs copies an image layer's object up when it is linked";
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

    if (!ctx.project_root.empty() && fs::is_directory(ctx.project_root / "manifests", ec)) {
        index::HttpClient http(ctx.home / "cache" / "http", false);
        std::set<std::string> urls;
        for (const auto& e : fs::directory_iterator(ctx.project_root / "manifests", ec)) {
            std::string n = e.path().filename().string();
            if (!n.ends_with(".toml") || n.starts_with("pylock.")) continue;
            auto m = lock::Manifest::parse(read_file(e.path()), e.path().string());
            if (!m) continue;
            for (const auto& i : m->indexes) {
                if (!urls.insert(i.url).second) continue;
                std::string status;
                try {
                    auto resp = http.get({i.url + (i.url.ends_with("/") ? "" : "/"), {}, i.ca, std::nullopt, std::nullopt, false});
                    status = "reachable (HTTP " + std::to_string(resp.status) + ")";
                } catch (const Error& err) {
                    status = "NOT reachable: " + err.message();
                }
                r.indexes.push_back(i.name + "  " + i.url + "  " + status);
            }
        }
    }
    return r;
}

}  // namespace envbox::ops
