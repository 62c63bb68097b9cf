// zip_dump ARCHIVE...: what envbox's zip reader reads from each archive, for the differential
// test against CPython's zipfile and libarchive (tests/util/test_zip_differential.py). Per
// archive: `archive PATH`, then `member HEXNAME SIZE SHA256` per member in directory order, then
// `ok`; or `refused MESSAGE` when envbox would not install from it: the reader throws
// envbox::Error (directory or data), or a member fails the checks the store makes before
// ingesting a wheel (src/store/store.cpp: a safe path, a regular file or directory, no name
// twice). Names are printed in hex because an archive's names may hold any byte.
#include <sys/stat.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "envbox/pep/wheel.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/zip.hpp"

namespace {

std::string hex(const std::string& s) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out.empty() ? "-" : out;
}

void dump(const std::string& path) {
    std::printf("archive %s\n", path.c_str());
    std::vector<std::string> lines;
    try {
        envbox::zip::File file(path);
        std::set<std::string> seen;
        for (const auto& m : file.members()) {
            auto safe = envbox::pep::safe_member_path(m.name);
            if (!safe) throw safe.error();
            const std::uint32_t type = m.unix_mode() & S_IFMT;
            if (m.is_directory() || type == S_IFDIR) continue;
            if (type != 0 && type != S_IFREG)
                throw envbox::Error(envbox::ErrorCode::integrity, "not a regular file");
            if (!seen.insert(*safe).second)
                throw envbox::Error(envbox::ErrorCode::integrity, "a name twice");
        }
        for (std::size_t i = 0; i < file.members().size(); ++i) {
            std::string data = file.read(i);
            lines.push_back("member " + hex(file.members()[i].name) + " " +
                            std::to_string(data.size()) + " " +
                            envbox::to_hex(envbox::sha256(data)));
        }
    } catch (const envbox::Error& e) {
        std::string message = e.what();
        for (char& c : message)
            if (c == '\n') c = ' ';
        std::printf("refused %s\n", message.c_str());
        return;
    }
    for (const auto& l : lines)
        std::printf("%s\n", l.c_str());
    std::printf("ok\n");
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        dump(argv[i]);
    return 0;
}
