// libFuzzer target: the reader of `envbox check`'s probe output and kept records
// (env/check_record.hpp) on arbitrary bytes, as a hostile environment's interpreter could print
// them. Properties beyond "no crash, no read out of bounds": anything malformed is refused with
// envbox::Error and never another exception; what is read is bounded (every text at most 2000
// bytes, printable); and a record written from what was read reads back to the same text.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "envbox/env/check_record.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/printable.hpp"

namespace {

void bounded(const std::string& s) {
    if (s.size() > 2000 || envbox::has_hidden(s)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool probe = data[0] & 1;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    envbox::env::CheckRecord r;
    try {
        r = envbox::env::parse_check(text, "fuzz", probe);
    } catch (const envbox::Error&) {
        return 0;
    }
    for (const auto& i : r.imports)
        bounded(i.message);
    for (const auto* s : {&r.python, &r.gpu.none, &r.gpu.failed, &r.gpu.device, &r.gpu.torch})
        bounded(*s);
    (void)r.findings();
    if (probe) {
        r.generation = 1;
        r.when = "2026-12-06T10:00:00Z";
    }
    const std::string once = envbox::env::check_record_text(r);
    const std::string twice =
        envbox::env::check_record_text(envbox::env::parse_check(once, "fuzz", false));
    if (once != twice) std::abort();
    return 0;
}
