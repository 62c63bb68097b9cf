// The ELF reader (util/elf) on real files: a library the compiler builds here (SONAME, DT_NEEDED,
// RUNPATH, C++ exports, weak and strong undefined symbols), the system's libc (versioned
// definitions, default and hidden) and every truncation and many corruptions of the built
// library (refused with an Error, never read out of bounds: the sanitizer pass runs this too).
// The link check's tables: CUDA library majors and demangling.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "env/link_linker.hpp"
#include "envbox/env/link_check.hpp"
#include "envbox/util/elf.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/process.hpp"

namespace fs = std::filesystem;
using envbox::elf::Facts;
using envbox::elf::Symbol;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

const Symbol* find(const std::vector<Symbol>& list, const std::string& name) {
    auto it =
        std::find_if(list.begin(), list.end(), [&](const Symbol& s) { return s.name == name; });
    return it == list.end() ? nullptr : &*it;
}

// A shared library built by the compiler: C++ in namespace demo, needing libm, with a RUNPATH.
std::string built_library() {
    static const std::string bytes = [] {
        const fs::path dir =
            fs::temp_directory_path() / ("envbox-elf-" + std::to_string(::getpid()));
        fs::create_directories(dir);
        std::ofstream(dir / "demo.cpp")
            << "#include <cmath>\n"
               "namespace demo { double root(double x) { return std::sqrt(x) + std::cbrt(x); } }\n"
               "extern \"C\" __attribute__((weak)) int maybe_there(void);\n"
               "extern \"C\" int needed_elsewhere(void);\n"
               "extern \"C\" int call(void) { return (maybe_there ? maybe_there() : 0) + "
               "needed_elsewhere(); }\n";
        auto r = envbox::run_capture(
            {"c++", "-shared", "-fPIC", "-O1", "-o", (dir / "libdemo.so.1").string(),
             (dir / "demo.cpp").string(), "-Wl,-soname,libdemo.so.1", "-lm",
             "-Wl,--no-as-needed,-rpath,$ORIGIN/../lib:/opt/x,--enable-new-dtags"});
        INFO(r.err);
        REQUIRE(r.status == 0);
        std::string out = slurp(dir / "libdemo.so.1");
        fs::remove_all(dir);
        return out;
    }();
    return bytes;
}

}  // namespace

TEST_CASE("elf: a library the compiler built reads as the loader sees it") {
    const Facts f = envbox::elf::read_facts(built_library(), "libdemo.so.1");
    CHECK(f.elf_class == 64);
    CHECK(f.shared);
    CHECK(f.soname == "libdemo.so.1");
    CHECK(std::count(f.needed.begin(), f.needed.end(), "libm.so.6") == 1);
    CHECK(std::count(f.needed.begin(), f.needed.end(), "libc.so.6") == 1);
    CHECK(f.runpath == std::vector<std::string>{"$ORIGIN/../lib", "/opt/x"});
    CHECK(f.rpath.empty());
    CHECK(find(f.exports, "_ZN4demo4rootEd"));
    CHECK(find(f.exports, "call"));
    const Symbol* weak = find(f.undefined, "maybe_there");
    REQUIRE(weak);
    CHECK(weak->weak);
    const Symbol* strong = find(f.undefined, "needed_elsewhere");
    REQUIRE(strong);
    CHECK_FALSE(strong->weak);
    const Symbol* sqrt_ref = find(f.undefined, "sqrt");
    REQUIRE(sqrt_ref);
    CHECK(sqrt_ref->version.rfind("GLIBC_", 0) == 0);
    CHECK(sqrt_ref->library == "libm.so.6");
}

TEST_CASE("elf: the system's libc, versioned definitions default and hidden") {
    fs::path libc;
    for (const char* p : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6",
                          "/lib64/libc.so.6"})
        if (fs::exists(p)) libc = p;
    REQUIRE_FALSE(libc.empty());  // Debian's multiarch folder, or /lib64
    const Facts f = envbox::elf::read_facts(slurp(libc), libc.string());
    CHECK(f.soname == "libc.so.6");
    const Symbol* printf_sym = find(f.exports, "printf");
    REQUIRE(printf_sym);
    CHECK(printf_sym->version.rfind("GLIBC_", 0) == 0);
    CHECK_FALSE(printf_sym->hidden);
    // memcpy is defined twice: the old version hidden, the new one the default.
    int memcpys = 0, hidden = 0;
    for (const auto& s : f.exports)
        if (s.name == "memcpy") memcpys++, hidden += s.hidden;
    CHECK(memcpys >= 1);
    CHECK(hidden == memcpys - 1);
}

TEST_CASE("elf: truncated and corrupted files are refused, never read out of bounds") {
    const std::string bytes = built_library();
    CHECK_THROWS_AS(envbox::elf::read_facts("not an elf file at all, no", "x"), envbox::Error);
    for (std::size_t n = 0; n < bytes.size(); n += (n < 256 ? 1 : 97)) {
        try {
            (void)envbox::elf::read_facts(std::string_view(bytes).substr(0, n), "cut");
        } catch (const envbox::Error&) {
        }
    }
    std::uint32_t seed = 12345;
    for (int round = 0; round < 3000; ++round) {
        std::string hostile = bytes;
        for (int k = 0; k < 4; ++k) {
            seed = seed * 1103515245 + 12345;
            hostile[(seed >> 8) % hostile.size()] = static_cast<char>(seed >> 24);
        }
        try {
            (void)envbox::elf::read_facts(hostile, "flipped");
        } catch (const envbox::Error&) {
        }
    }
    envbox::elf::Limits tight;
    tight.max_symbols = 2;
    CHECK_THROWS_AS(envbox::elf::read_facts(bytes, "bounded", tight), envbox::Error);
}

TEST_CASE("link check: the CUDA lines that ship each library major") {
    using envbox::env::cuda_lines_of_library;
    CHECK(cuda_lines_of_library("libcudart.so.12") == std::vector<int>{12});
    CHECK(cuda_lines_of_library("libcudart.so.13") == std::vector<int>{13});
    CHECK(cuda_lines_of_library("libcufft.so.12") == std::vector<int>{13});  // CUDA 13's cuFFT
    CHECK(cuda_lines_of_library("libcufft.so.11") == std::vector<int>{12});
    CHECK(cuda_lines_of_library("libcusparse.so.12") == std::vector<int>{12, 13});
    CHECK(cuda_lines_of_library("libcurand.so.10") == std::vector<int>{11, 12, 13});
    CHECK(cuda_lines_of_library("libnvrtc.so.11.2") == std::vector<int>{11});
    CHECK(cuda_lines_of_library("libcudart.so.99")->empty());
    CHECK_FALSE(cuda_lines_of_library("libcudnn.so.9"));
    CHECK_FALSE(cuda_lines_of_library("libc10.so"));
    CHECK_FALSE(cuda_lines_of_library("libcudart.so"));
    CHECK_FALSE(cuda_lines_of_library("libcudart.so.99999999999"));  // no overflow, no throw
    CHECK(envbox::env::demangle("_ZNK3c1010TensorImpl5numelEv") ==
          "c10::TensorImpl::numel() const");
    CHECK(envbox::env::demangle("cudaMalloc") == "cudaMalloc");
    CHECK(envbox::env::demangle("_Z" + std::string(5000, 'x')) == "_Z" + std::string(5000, 'x'));
}

TEST_CASE("link check: $ORIGIN is replaced once, where the loader replaces it") {
    using envbox::env::link::with_origin;
    CHECK(with_origin("$ORIGIN/../lib", "a/b") == "a/b/../lib");
    CHECK(with_origin("${ORIGIN}", "x") == "x");
    CHECK(with_origin("$ORIGINAL/x", "o") == "$ORIGINAL/x");
    // A folder named `$ORIGIN` in a hostile wheel is never substituted again.
    CHECK(with_origin("$ORIGIN/lib", "evil/$ORIGIN") == "evil/$ORIGIN/lib");
    CHECK(envbox::env::link::fold("a/b/../../c") == std::optional<std::string>("c"));
    CHECK_FALSE(envbox::env::link::fold("a/../../c"));
}

namespace {

std::uint64_t get_le(const std::string& b, std::size_t at, unsigned n) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i)
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
    return v;
}

void put_le(std::string& b, std::size_t at, unsigned n, std::uint64_t v) {
    for (unsigned i = 0; i < n; ++i)
        b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

TEST_CASE("elf: tables that point into each other cost work bounded by the file's size") {
    // The built library with its version-need section listed 20 000 times more, each copy
    // reading its names from one 60 000-byte string: a 1.3 MB file whose reading would copy
    // 1.2 GB of strings, refused after a bounded amount of work instead.
    std::string b = built_library();
    REQUIRE(b[4] == 2);  // ELF64, little-endian (x86_64, aarch64)
    const std::size_t shoff = get_le(b, 0x28, 8), shnum = get_le(b, 0x3c, 2);
    std::size_t need = 0;
    for (std::size_t i = 0; i < shnum; ++i)
        if (get_le(b, shoff + i * 64 + 4, 4) == 0x6ffffffe) need = shoff + i * 64;
    REQUIRE(need != 0);
    const std::size_t at = get_le(b, need + 24, 8);
    put_le(b, at + 4, 4, 0);  // vn_file and the first vna_name: offset 0 of their table
    put_le(b, at + get_le(b, at + 8, 4) + 8, 4, 0);
    const std::size_t table = b.size();
    b += std::string(60000, 'x') + '\0';
    b.resize((b.size() + 7) & ~std::size_t{7}, '\0');
    const std::size_t headers = b.size();
    b += b.substr(shoff, shnum * 64);
    std::string strtab(64, '\0');
    put_le(strtab, 4, 4, 3);  // SHT_STRTAB
    put_le(strtab, 24, 8, table);
    put_le(strtab, 32, 8, 60001);
    b += strtab;
    std::string copy = b.substr(need, 64);
    put_le(copy, 40, 4, shnum);  // sh_link: the long table
    for (int i = 0; i < 20000; ++i)
        b += copy;
    put_le(b, 0x28, 8, headers);
    put_le(b, 0x3c, 2, shnum + 1 + 20000);
    CHECK_THROWS_WITH(envbox::elf::read_facts(b, "tangled"),
                      Catch::Contains("takes more work to read than its"));
}
