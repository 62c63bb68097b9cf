// libFuzzer target: the text files inside a wheel (pep/metadata, pep/wheel): METADATA and its
// RFC 822 headers, RECORD rows, WHEEL, entry_points.txt and member paths. Each must parse to a
// value or an error, never crash; a RECORD row that parses also passes validate_record_row, and
// safe_member_path's result is itself safe and stable.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "envbox/pep/metadata.hpp"
#include "envbox/pep/wheel.hpp"
#include "envbox/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        auto meta = envbox::pep::CoreMetadata::parse(text);
        if (meta.ok()) meta->get_all("Requires-Dist");
        envbox::pep::parse_headers(text);
        auto record = envbox::pep::parse_record(text);
        if (record.ok())
            for (const auto& row : *record)
                if (envbox::pep::validate_record_row(row)) std::abort();
        (void)envbox::pep::parse_wheel_info(text);
        auto entries = envbox::pep::parse_entry_points(text);
        if (entries.ok())
            for (const auto& e : *entries)
                envbox::pep::script_name_escapes(e.name);
        std::string_view first_line = text.substr(0, text.find('\n'));
        auto path = envbox::pep::safe_member_path(first_line);
        if (path.ok()) {
            auto again = envbox::pep::safe_member_path(*path);
            if (!again.ok() || *again != *path) std::abort();
        }
    } catch (const envbox::Error&) {
    }
    return 0;
}
