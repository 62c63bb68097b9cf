// libFuzzer target: the ELF reader (util/elf) on arbitrary bytes, as a wheel's `.so` would give
// them. Properties beyond "no crash, no read out of bounds": anything hostile is refused with
// envbox::Error and never another exception; what it reads stays within the limits given (no
// more symbols or entries, no longer strings).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "envbox/util/elf.hpp"
#include "envbox/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    envbox::elf::Limits limits;
    limits.max_symbols = 4096;
    limits.max_string = 512;
    limits.max_entries = 64;
    try {
        const auto f = envbox::elf::read_facts(
            std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", limits);
        if (f.exports.size() + f.undefined.size() > limits.max_symbols) std::abort();
        if (f.needed.size() > limits.max_entries) std::abort();
        for (const auto& s : f.exports)
            if (s.name.size() > limits.max_string || s.version.size() > limits.max_string)
                std::abort();
        for (const auto& s : f.undefined)
            if (s.name.size() > limits.max_string || s.library.size() > limits.max_string)
                std::abort();
    } catch (const envbox::Error&) {
    }
    return 0;
}
