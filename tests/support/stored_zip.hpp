#pragma once
// A zip of stored (uncompressed) members, as a wheel tool on Unix writes them, for in-process
// tests that need a real wheel file without Python.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace envboxtest {

struct ZipMember {
    std::string name, content;
    bool executable = false;
};

inline std::uint32_t zip_crc32(std::string_view data) {
    std::uint32_t c = 0xffffffffu;
    for (unsigned char b : data) {
        c ^= b;
        for (int i = 0; i < 8; ++i)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/// The bytes of a zip holding `members` in order (no zip64: small test files only).
inline std::string stored_zip(const std::vector<ZipMember>& members) {
    auto put = [](std::string& out, std::uint64_t v, int bytes) {
        for (int i = 0; i < bytes; ++i)
            out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    };
    std::string out, directory;
    for (const auto& m : members) {
        const std::uint64_t offset = out.size();
        const std::uint32_t crc = zip_crc32(m.content);
        for (std::string* s : {&out, &directory}) {
            const bool central = s == &directory;
            put(*s, central ? 0x02014b50 : 0x04034b50, 4);
            if (central) put(*s, (3 << 8) | 20, 2);  // made by: Unix
            put(*s, 20, 2);                          // version needed
            put(*s, 0, 2);                           // flags
            put(*s, 0, 2);                           // stored
            put(*s, 0, 4);                           // time, date
            put(*s, crc, 4);
            put(*s, m.content.size(), 4);
            put(*s, m.content.size(), 4);
            put(*s, m.name.size(), 2);
            put(*s, 0, 2);  // extra
            if (central) {
                put(*s, 0, 2);  // comment
                put(*s, 0, 2);  // disk
                put(*s, 0, 2);  // internal attributes
                put(*s, std::uint64_t(m.executable ? 0100755 : 0100644) << 16, 4);
                put(*s, offset, 4);
            }
            *s += m.name;
            if (!central) *s += m.content;
        }
    }
    const std::uint64_t directory_offset = out.size();
    out += directory;
    put(out, 0x06054b50, 4);
    put(out, 0, 4);  // disks
    put(out, members.size(), 2);
    put(out, members.size(), 2);
    put(out, directory.size(), 4);
    put(out, directory_offset, 4);
    put(out, 0, 2);
    return out;
}

}  // namespace envboxtest
