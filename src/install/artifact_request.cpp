// Where a selected item's archive comes from: its lock entry (path or URL, sha256, size) and
// its index's credentials and CA (contracts in install/fetch.hpp).

#include "envbox/index/url.hpp"
#include "envbox/install/fetch.hpp"

namespace envbox::install {

index::ArtifactRequest artifact_request(const std::string& display, const lock::FileRef& file,
                                        const std::string& sha256,
                                        const std::optional<std::string>& index,
                                        const std::vector<resolve::IndexConfig>& indexes) {
    index::ArtifactRequest req;
    req.display = display;
    req.location = file.path ? *file.path : file.url.value_or("");
    req.sha256 = sha256;
    req.size = file.size;
    if (index) {
        std::string url = *index;
        while (!url.empty() && url.back() == '/')
            url.pop_back();
        for (const auto& c : indexes) {
            const bool mirrored = !c.canonical.empty() && c.canonical == url;
            if (c.url != url && !mirrored) continue;
            req.ca = c.ca;
            req.username = c.username;
            req.password = c.password;
            req.index_url = c.url;
            // A lock names the canonical index; this machine fetches through its mirror first.
            if (mirrored && file.url && !file.path) {
                req.location = index::rebase_url(*file.url, c.canonical, c.url);
                req.fallback = *file.url;
                req.via = c.mirror_variable;
            }
        }
    }
    return req;
}

index::ArtifactRequest artifact_request(const Item& item,
                                        const std::vector<resolve::IndexConfig>& indexes) {
    // A wheel built from the item's sdist (`Item::sdist`, its sha256 no longer the sdist's): the
    // store's, or a received artifact's; no location or size of the lock is its.
    if (item.local || (item.sdist && item.file->sha256() != item.sha256))
        return {item.filename, "",           item.sha256, std::nullopt,
                std::nullopt,  std::nullopt, std::nullopt};
    return artifact_request(item.filename, *item.file, item.sha256, item.package->index, indexes);
}

}  // namespace envbox::install
