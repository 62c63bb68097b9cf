#include "envbox/install/built.hpp"

#include <algorithm>

#include "envbox/pep/digest.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::install {
namespace {

constexpr std::string_view kHeader = "envbox-built-wheel 1";
constexpr std::size_t kMaxRecordBytes = 1u << 20;

fs::path builds_dir(const store::Store& store) {
    return store.layout().builds();
}

}  // namespace

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
    const std::string digest = key.digest();
    UniqueFd dir = open_own_dir(store.root(), "builds");
    if (!dir) return std::nullopt;
    const fs::path path = builds_dir(store) / digest;
    auto text = read_own_file(dir.get(), path, kMaxRecordBytes);
    if (!text) return std::nullopt;
    kv::Reader r(*text, path.string());
    auto head = r.next();
    if (!head || head->text != kHeader) throw r.error("not an envbox built-wheel record");
    auto wheel = r.next();
    if (!wheel || wheel->key != "wheel") throw r.error("no wheel line");
    const auto fields = kv::split_fields(wheel->value);
    if (fields.size() != 2 || !pep::is_sha256_hex(fields[0]) ||
        !pep::WheelFilename::parse(fields[1]))
        throw r.error("malformed wheel line");
    BuiltRecord out{std::string(fields[0]), std::string(fields[1]), std::string(r.rest())};
    // A record is for the key whose digest names it: the text it keeps must be that key.
    if (out.key_text != key.text()) throw r.error("its key is not the key it is named after");
    if (!store.load_wheel(out.wheel_sha256)) return std::nullopt;  // collected since
    return out;
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
    // copy, since the build's folder is removed with its log's neighbours.
    const fs::path copy = store.tmp_dir() / ("built-" + out.wheel_sha256);
    fs::copy_file(wheel, copy, fs::copy_options::overwrite_existing);
    store.keep_archive(out.wheel_sha256, copy);
    make_own_dir(store.root(), "builds");  // never through a planted link
    kv::Writer w{std::string(kHeader)};
    w.add_fields("wheel", {out.wheel_sha256, out.filename});
    w.raw(out.key_text);
    write_file_atomic(builds_dir(store) / key.digest(), std::move(w).take(), 0444,
                      Durability::fsync);
    return out;
}

}  // namespace envbox::install
