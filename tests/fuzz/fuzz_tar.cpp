// libFuzzer target: the .tar.gz reader (util/tar) on arbitrary tar archives. The input is the
// uncompressed tar (so the fuzzer works on headers, pax records and long names, not on deflate),
// gzipped here with ISA-L and written to a file, so the whole path runs: gzip decoding and its
// CRC-32, header checksums, numeric fields, pax and GNU long names, member types, padding.
// Properties beyond "no crash": anything hostile is refused with envbox::Error and never another
// exception; every member handed on has a non-empty name without a NUL within the limits; a
// file's bytes add up to exactly its size; no more members and bytes than the limits allow.
#include <isa-l/igzip_lib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "envbox/util/error.hpp"
#include "envbox/util/tar.hpp"

namespace {

std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
    std::vector<std::uint8_t> out(size + size / 2 + 1024);
    isal_zstream s;
    isal_deflate_stateless_init(&s);
    s.gzip_flag = IGZIP_GZIP;
    s.next_in = const_cast<std::uint8_t*>(data);
    s.avail_in = static_cast<std::uint32_t>(size);
    s.next_out = out.data();
    s.avail_out = static_cast<std::uint32_t>(out.size());
    s.end_of_stream = 1;
    if (isal_deflate_stateless(&s) != COMP_OK) std::abort();
    out.resize(s.total_out);
    return out;
}

std::string scratch_path() {
    static const std::string path =
        "/tmp/envbox-fuzz-tar-" + std::to_string(::getpid()) + ".tar.gz";
    return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::uint8_t> gz = gzip(data, size);
    const std::string path = scratch_path();
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(gz.data(), 1, gz.size(), f) != gz.size()) std::abort();
    std::fclose(f);
    envbox::tar::Limits limits;
    limits.max_member = 1 << 20;
    limits.max_total = 1 << 21;
    limits.max_members = 64;
    limits.max_name = 1024;
    std::uint64_t members = 0, total = 0;
    // The file member being read: its bytes so far and its size, checked when the next member
    // or the end shows it complete.
    std::uint64_t got = 0, want = 0;
    try {
        envbox::tar::read_tar_gz(path, limits,
                                 [&](const envbox::tar::Entry& e) -> envbox::tar::Sink {
                                     if (got != want) std::abort();
                                     got = want = 0;
                                     if (e.name.empty() || e.name.size() > limits.max_name ||
                                         e.name.find('\0') != std::string::npos)
                                         std::abort();
                                     if (++members > limits.max_members) std::abort();
                                     if (e.directory) return {};
                                     total += e.size;
                                     if (e.size > limits.max_member || total > limits.max_total)
                                         std::abort();
                                     want = e.size;
                                     return [&](const char*, std::size_t n) {
                                         got += n;
                                         if (got > want) std::abort();
                                     };
                                 });
        if (got != want) std::abort();
    } catch (const envbox::Error&) {
    }
    ::unlink(path.c_str());
    return 0;
}
