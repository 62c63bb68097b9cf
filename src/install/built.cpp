#include "envbox/install/built.hpp"

#include <algorithm>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::install {
std::string BuildKey::text() const {
    kv::Writer w("envbox-build-key 1");
    const auto add = [&w](std::string_view field, std::string_view value) {
        w.add(std::string(field), kv::percent_encode(value));
    };
    add("sdist", sdist_sha256);
    add("build-env", build_env);
    add("python", python);
    add("platform", platform);
    add("backend", backend);
    for (const auto& [k, v] : config_settings)
        w.add_fields("config", {kv::percent_encode(k), kv::percent_encode(v)});
    for (const auto& [k, v] : variables)
        w.add_fields("variable", {kv::percent_encode(k), kv::percent_encode(v)});
    std::vector<std::string> sorted = runtime;
    std::sort(sorted.begin(), sorted.end());
    for (const auto& r : sorted)
        add("runtime", r);
    sorted = toolchain;
    std::sort(sorted.begin(), sorted.end());
    for (const auto& t : sorted)
        add("toolchain", t);
    return std::move(w).take();
}

std::string BuildKey::digest() const {
    return to_hex(sha256(text()));
}

std::optional<BuiltRecord> find_built_wheel(const store::Store& store, const BuildKey& key) {
    auto record = store.load_build(key.digest());
    if (!record) return std::nullopt;
    // A record is for the key whose digest names it: the text it keeps must be that key.
    if (record->provenance != key.text())
        throw Error(ErrorCode::integrity,
                    (store.layout().builds() / key.digest()).string() +
                        ": its key is not the key it is named after (damaged or planted)");
    if (!store.load_wheel(record->wheel_sha256)) return std::nullopt;  // collected since
    return BuiltRecord{record->wheel_sha256, record->filename, record->provenance};
}

BuiltRecord store_built_wheel(const store::Store& store, const BuildKey& key,
                              const fs::path& wheel) {
    BuiltRecord out;
    out.filename = wheel.filename().string();
    out.wheel_sha256 = to_hex(sha256_file(wheel));
    out.key_text = key.text();
    store::Ingest ingest(store, wheel, out.wheel_sha256, out.filename, false);
    for (std::size_t t = 0; t < ingest.task_count(); ++t)  // one wheel of a build: one thread
        ingest.run_task(t);
    const store::WheelFiles files = ingest.finish();
    store.publish({&files});
    // The archive is kept (push and pack send built wheels as they send downloaded ones): a
    // copy, since the build's folder is removed after.
    const fs::path copy = store.tmp_dir() / ("built-" + out.wheel_sha256);
    fs::copy_file(wheel, copy, fs::copy_options::overwrite_existing);
    store.keep_archive(out.wheel_sha256, copy);
    store.record_build(key.digest(), {out.wheel_sha256, out.filename, out.key_text});
    return out;
}

}  // namespace envbox::install
