// libFuzzer target: the two TOML files envbox reads from a repository (lock/manifest,
// lock/pylock) and PEP 751's selection over a lock that parses. Hostile text (deep nesting,
// huge documents, wrong types, bad values) must be a located error, never a crash or a foreign
// exception.
#include <cstdint>
#include <string_view>

#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/pep/marker.hpp"
#include "envbox/pep/tags.hpp"
#include "envbox/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        auto manifest = envbox::lock::Manifest::parse(text, "envbox.toml");
        (void)manifest;
        auto lock = envbox::lock::Pylock::parse(text, "pylock.toml");
        if (lock.ok()) {
            static const auto tags =
                envbox::pep::TargetTags::cpython(3, 12, "manylinux_2_28_x86_64");
            envbox::lock::SelectTarget target;
            target.environment = envbox::pep::MarkerEnvironment::linux_cpython("3.12.8", "x86_64");
            target.tags = &tags.value();
            (void)envbox::lock::select(*lock, target);
        }
    } catch (const envbox::Error&) {
    }
    return 0;
}
