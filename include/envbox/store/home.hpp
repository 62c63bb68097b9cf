#pragma once
/// The layout of an envbox home (`$ENVBOX_HOME`; docs/ARCHITECTURE.md, "The store"), named once.
/// Every layer asks `Home` for a folder instead of spelling the path out, so the layout can be
/// read (and changed) here alone:
///
///   store-v1/objects/sha256/   the store's objects
///   store-v1/wheels/<sha256>/  one file list per ingested wheel
///   store-v1/builds/<key>      a wheel built from an sdist, by every input of its build
///   tmp/                       staging, on the store's filesystem (renames are atomic)
///   locks/                     store.lock and one lock per environment
///   envs/<project key>/<ENV>/  generations and `current`
///   cache/http/                index pages and metadata (revalidated)
///   cache/metadata/            PEP 658 metadata by the wheel's sha256
///   cache/downloads/           wheels being downloaded, by sha256
///   cache/interpreters/        interpreter probes
///   cache/oci/                 repositories `push` wrote to, per registry (for mounts)
///   cache/compile/<key>.<ENV>/ one environment's compile caches (writable inside `run`)
///
/// Paths only: nothing here touches the filesystem.

#include <filesystem>
#include <string>
#include <string_view>

namespace envbox::store {

class Home {
  public:
    Home() = default;
    explicit Home(std::filesystem::path root) : root_(std::move(root)) {}

    const std::filesystem::path& root() const { return root_; }
    bool empty() const { return root_.empty(); }

    std::filesystem::path store() const { return root_ / "store-v1"; }
    std::filesystem::path objects() const { return store() / "objects" / "sha256"; }
    std::filesystem::path wheels() const { return store() / "wheels"; }
    /// One record per wheel built from an sdist, named by its build key (install/built.hpp).
    std::filesystem::path builds() const { return store() / "builds"; }
    std::filesystem::path tmp() const { return root_ / "tmp"; }

    std::filesystem::path locks() const { return root_ / "locks"; }
    std::filesystem::path store_lock() const { return locks() / "store.lock"; }
    /// `locks/<project key>.<env>.lock`.
    std::filesystem::path env_lock(std::string_view project_key, std::string_view env) const {
        return locks() / (std::string(project_key) + "." + std::string(env) + ".lock");
    }

    std::filesystem::path envs() const { return root_ / "envs"; }
    /// `envs/<project key>/<env>`.
    std::filesystem::path env(std::string_view project_key, std::string_view env) const {
        return envs() / std::string(project_key) / std::string(env);
    }

    std::filesystem::path cache() const { return root_ / "cache"; }
    std::filesystem::path http_cache() const { return cache() / "http"; }
    std::filesystem::path metadata_cache() const { return cache() / "metadata"; }
    std::filesystem::path downloads() const { return cache() / "downloads"; }
    std::filesystem::path interpreters() const { return cache() / "interpreters"; }
    /// `cache/oci/`: what `push` remembers of registries (the repositories it pushed to).
    std::filesystem::path oci_cache() const { return cache() / "oci"; }
    /// `cache/compile/<project key>.<env>`.
    std::filesystem::path compile_cache(std::string_view project_key, std::string_view env) const {
        return cache() / "compile" / (std::string(project_key) + "." + std::string(env));
    }

    /// The name the home was first used by (see `ops::canonical_home`).
    std::filesystem::path recorded_name() const { return root_ / ".home-path"; }

  private:
    std::filesystem::path root_;
};

}  // namespace envbox::store
