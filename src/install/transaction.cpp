// One install transaction: select, build, fetch, link (contracts in install/transaction.hpp).
#include "envbox/install/transaction.hpp"

#include "envbox/install/generation.hpp"
#include "envbox/install/local.hpp"
#include "envbox/store/home.hpp"

namespace fs = std::filesystem;

namespace envbox::install {

Transaction::Transaction(const lock::LockFile& lock, const Target& target,
                         TransactionOptions options)
    : lock_(lock), target_(target), options_(std::move(options)) {
    items_ = select_items(lock.pylock, target, lock.path, buildable_packages(lock));
    prepare_local_items(items_, lock, options_.manifests,
                        options_.received ? &options_.received->builds : nullptr);
    plan_.lock_dir = lock.path.parent_path();
    plan_.downloads = store::Home(options_.site.home).downloads();
    plan_.http = options_.http;
    plan_.indexes = options_.indexes;
    plan_.offline = options_.offline;
    plan_.received = options_.received;
    plan_.verify_by_content = options_.verify_by_content;
    plan_.jobs = options_.site.jobs;
    plan_.interpreter = &*target.interpreter;
    plan_.bytecode = options_.bytecode;
    plan_.elf_facts = options_.elf_facts;
}

std::string Transaction::local_inputs() const {
    std::string out;
    for (const auto& item : items_)
        if (item.local) out += "\n--local " + item.package->name + " " + item.sha256;
    return out;
}

FetchReport Transaction::fetch(store::Store& store) {
    const auto received =
        build_sdists(options_.site, store, items_, target_, lock_, options_.manifests, plan_);
    FetchReport report = fetch_into_store(store, items_, plan_, *options_.site.progress);
    for (const auto& built : received)  // a node may push what it received
        record_received_build(store, built);
    return report;
}

env::BuildReport Transaction::execute(store::Store& store, env::Generation& gen,
                                      const fs::path& edir, const lock::Manifest* manifest,
                                      const env::BuildOptions& build) {
    for (const auto& k : options_.bytecode)
        gen.bytecode.push_back(k.name());
    const std::vector<env::InstallRequest> requests = install_requests(items_, manifest, gen);
    options_.site.progress->phase("Installing", requests.size());
    return env::build_generation(store, *target_.interpreter, gen, edir, requests, build);
}

std::map<std::string, ShippedWheel> Transaction::build_editables(store::Store& store) {
    // The editables as folders, beside the lock's wheels a build may see (its runtime).
    std::vector<Item> items;
    for (const auto& item : items_) {
        if (item.local && item.editable) {
            Item regular = item;
            regular.editable = false;
            regular.sha256 = tree_digest(item.tree, options_.manifests);
            items.push_back(std::move(regular));
        } else if (!item.local && !item.sdist) {
            items.push_back(item);
        }
    }
    build_sdists(options_.site, store, items, target_, lock_, options_.manifests, plan_);
    std::map<std::string, ShippedWheel> out;
    for (const auto& item : items)
        if (item.local) out[item.package->name] = {item.filename, item.sha256};
    return out;
}

}  // namespace envbox::install
