// The bytecode compiler: long-lived interpreter workers fed source paths (bytecode.hpp).
#include "envbox/env/bytecode.hpp"

#include <sys/stat.h>

#include <cstring>

#include "envbox/util/error.hpp"
#include "envbox/util/process.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

// Request: level, source path length, dfile length (three little-endian u32), then both.
// Answer: 0 (a .pyc) or 1 (an error), a little-endian u32 length, then the bytes. The loop
// ends at end of input. -I -S -B: no site, no environment variables, no user site, no
// bytecode of its own; warnings (SyntaxWarning) silenced, they would go to /dev/null anyway.
constexpr const char* kWorkerScript = R"PY(
import sys, struct, warnings, importlib.util, importlib._bootstrap_external as be
warnings.simplefilter("ignore")
r, w = sys.stdin.buffer, sys.stdout.buffer
def take(n):
    b = r.read(n)
    if len(b) != n: sys.exit(0)
    return b
while True:
    head = r.read(12)
    if len(head) != 12: break
    level, ls, ld = struct.unpack("<III", head)
    src = take(ls); dfile = take(ld).decode("utf-8", "surrogateescape")
    try:
        with open(src, "rb") as f: data = f.read()
        code = compile(data, dfile, "exec", dont_inherit=True, optimize=level)
        out = be._code_to_hash_pyc(code, importlib.util.source_hash(data), False)
        w.write(b"\0" + struct.pack("<I", len(out)) + out)
    except BaseException as e:
        msg = ("%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")[:2000]
        w.write(b"\1" + struct.pack("<I", len(msg)) + msg)
    w.flush()
)PY";

void put_u32(std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint32_t get_u32(const unsigned char* p) {
    return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
           static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

}  // namespace

store::BytecodeKey bytecode_key(const Interpreter& in, int optimize) {
    if (in.cache_tag.empty() || in.magic.empty())
        throw Error(ErrorCode::invalid_input, in.executable.string() +
                                                  " has no bytecode cache tag (sys.implementation."
                                                  "cache_tag is None): it cannot use bytecode");
    store::BytecodeKey k{in.cache_tag, in.magic, optimize};
    (void)k.name();  // validates
    return k;
}

std::vector<int> bytecode_levels(std::string_view pythonoptimize) {
    std::vector<int> levels = {0};
    int level = 0;
    bool number = !pythonoptimize.empty();
    for (char c : pythonoptimize)
        if (c < '0' || c > '9')
            number = false;
        else if (level < 10)
            level = level * 10 + (c - '0');
    // Python takes any other non-empty value as 1 (as -O).
    if (!pythonoptimize.empty() && !number) level = 1;
    if (level > 0) levels.push_back(level >= 2 ? 2 : 1);
    return levels;
}

struct BytecodeCompiler::Worker {
    explicit Worker(const fs::path& python)
        : process({python.string(), "-I", "-S", "-B", "-c", kWorkerScript}) {}
    Coprocess process;
};

BytecodeCompiler::BytecodeCompiler(const Interpreter& in, unsigned workers)
    : python_(in.executable), max_workers_(workers == 0 ? 1 : workers) {}

BytecodeCompiler::~BytecodeCompiler() {
    // Every worker told to stop first, so they end together rather than one after another.
    for (auto& w : idle_)
        w->process.close_input();
}

std::size_t BytecodeCompiler::started() const {
    std::lock_guard lock(mutex_);
    return started_;
}

std::unique_ptr<BytecodeCompiler::Worker> BytecodeCompiler::take() {
    {
        std::lock_guard lock(mutex_);
        if (!idle_.empty()) {
            auto w = std::move(idle_.back());
            idle_.pop_back();
            return w;
        }
        ++started_;
    }
    return std::make_unique<Worker>(python_);
}

void BytecodeCompiler::give_back(std::unique_ptr<Worker> w) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_workers_) idle_.push_back(std::move(w));
}

CompileResult BytecodeCompiler::compile(const fs::path& source, std::string_view dfile,
                                        int optimize, int timeout_ms) {
    struct stat st {};
    if (::stat(source.c_str(), &st) != 0)
        return {std::nullopt, "cannot stat " + source.string() + ": " + std::strerror(errno)};
    if (static_cast<std::uintmax_t>(st.st_size) > kMaxBytecodeSource)
        return {std::nullopt, "source larger than " + std::to_string(kMaxBytecodeSource >> 20) +
                                  " MiB: left to Python"};
    std::string request;
    put_u32(request, static_cast<std::uint32_t>(optimize));
    put_u32(request, static_cast<std::uint32_t>(source.native().size()));
    put_u32(request, static_cast<std::uint32_t>(dfile.size()));
    request.append(source.native()).append(dfile);

    std::unique_ptr<Worker> w = take();
    unsigned char head[5];
    bool ok = w->process.write(request) &&
              w->process.read(reinterpret_cast<char*>(head), sizeof head, timeout_ms);
    std::string body;
    if (ok) {
        const std::uint32_t n = get_u32(head + 1);
        // A .pyc is a little larger than its source, about; an answer past any sane bound is
        // a worker gone wrong.
        ok = n <= kMaxBytecodeSource * 4 + (1u << 20);
        if (ok) {
            body.resize(n);
            ok = w->process.read(body.data(), n, timeout_ms);
        }
    }
    if (!ok) {
        // Dead or stuck: this file gets no .pyc, the next one a fresh worker.
        w->process.kill();
        const std::string status = w->process.wait_status();
        return {std::nullopt, "the bytecode compiler " + python_.string() + " failed on " +
                                  std::string(dfile) + " (" + status + ")"};
    }
    give_back(std::move(w));
    if (head[0] == 0) return {std::move(body), {}};
    return {std::nullopt, std::move(body)};
}

}  // namespace envbox::env
