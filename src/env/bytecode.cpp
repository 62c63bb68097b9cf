// The bytecode compiler: long-lived interpreter workers fed source paths (bytecode.hpp).
#include "envbox/env/bytecode.hpp"

#include <cstring>

#include "envbox/util/error.hpp"
#include "envbox/util/process.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

// Request: level, the lengths of the source path, of the path it may have moved to (0: none)
// and of the dfile (four little-endian u32), then the three. Answer: 0 (a .pyc), 1 (an error)
// or 2 (no file at either path), a little-endian u32 length, then the bytes. The loop ends at
// end of input. A source is read up to one byte past its size, and never past the limit
// (kMaxBytecodeSource), so no file can make a worker hold more; reading the limit for every
// file made CPython allocate that much each time (5 % more CPU on the real stack,
// bench/compile_rate.py --reads). -I -S -B: no site, no environment variables, no user
// site, no bytecode of its own; warnings (SyntaxWarning) silenced, they would go to /dev/null
// anyway.
constexpr const char* kWorkerScript = R"PY(
import gc, os, sys, struct, warnings, importlib.util, importlib._bootstrap_external as be
warnings.simplefilter("ignore")
gc.disable()  # compiling makes no cycles; an error's are collected below (5-10 % less CPU)
try:  # below the ingest the same create runs beside it (bytecode.hpp)
    os.nice(10)
except Exception:
    pass
try:  # a bound on what one hostile module can make a worker allocate: past it, a MemoryError
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
except Exception:
    pass
r, w = sys.stdin.buffer, sys.stdout.buffer
def take(n):
    b = r.read(n)
    if len(b) != n: sys.exit(0)
    return b
LIMIT = int(sys.argv[1])
failed = False
def source(paths):
    for p in paths:
        try:
            f = open(p, "rb")
        except FileNotFoundError:
            continue
        with f:  # the size first: a read of LIMIT + 1 would allocate that much for each file
            size = os.fstat(f.fileno()).st_size
            data = f.read(min(size, LIMIT) + 1)
            if len(data) > size: data += f.read(LIMIT + 1 - len(data))  # grown since
        if len(data) > LIMIT:
            raise ValueError("source larger than %d MiB: left to Python" % (LIMIT >> 20))
        return data
while True:
    head = r.read(16)
    if len(head) != 16: break
    level, ls, lm, ld = struct.unpack("<IIII", head)
    paths = [take(ls)] + ([take(lm)] if lm else [])
    dfile = take(ld).decode("utf-8", "surrogateescape")
    try:
        data = source(paths)
        if data is None:
            w.write(b"\2" + struct.pack("<I", 0)); w.flush(); continue
        code = compile(data, dfile, "exec", dont_inherit=True, optimize=level)
        out = be._code_to_hash_pyc(code, importlib.util.source_hash(data), False)
        w.write(b"\0" + struct.pack("<I", len(out)) + out)
    except BaseException as e:
        msg = ("%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")[:2000]
        w.write(b"\1" + struct.pack("<I", len(msg)) + msg)
        failed = True
    w.flush()
    if failed:
        failed = False
        gc.collect()
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
    if (pythonoptimize.empty()) return levels;
    // As CPython reads it (initconfig.c, _Py_str_to_int): strtol's leading blanks and sign, the
    // whole string a number; anything else, a negative value or an overflow counts as 1.
    std::size_t i = 0;
    while (i < pythonoptimize.size() &&
           (pythonoptimize[i] == ' ' || (pythonoptimize[i] >= '\t' && pythonoptimize[i] <= '\r')))
        ++i;
    bool negative = false;
    if (i < pythonoptimize.size() && (pythonoptimize[i] == '+' || pythonoptimize[i] == '-'))
        negative = pythonoptimize[i++] == '-';
    long value = 0;
    bool digits = false, overflow = false;
    for (; i < pythonoptimize.size() && pythonoptimize[i] >= '0' && pythonoptimize[i] <= '9'; ++i) {
        digits = true;
        value = value * 10 + (pythonoptimize[i] - '0');
        if (value > 1'000'000'000) overflow = true, value = 1'000'000'000;
    }
    int level = (!digits || i != pythonoptimize.size() || overflow || (negative && value > 0))
                    ? 1
                    : static_cast<int>(value);
    // Python names the file after the level (`.opt-3.pyc`) and compiles it as level 2; levels
    // past 99 are not worth a key of their own: they get none and compile at import.
    if (level > 0 && level <= 99) levels.push_back(level);
    return levels;
}

struct BytecodeCompiler::Worker {
    explicit Worker(const fs::path& python)
        : process({python.string(), "-I", "-S", "-B", "-c", kWorkerScript,
                   std::to_string(kMaxBytecodeSource)}) {}
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
    return compile(source, {}, dfile, optimize, timeout_ms);
}

CompileResult BytecodeCompiler::compile(const fs::path& source, const fs::path& moved_to,
                                        std::string_view dfile, int optimize, int timeout_ms) {
    std::string request;
    put_u32(request, static_cast<std::uint32_t>(optimize));
    put_u32(request, static_cast<std::uint32_t>(source.native().size()));
    put_u32(request, static_cast<std::uint32_t>(moved_to.native().size()));
    put_u32(request, static_cast<std::uint32_t>(dfile.size()));
    request.append(source.native()).append(moved_to.native()).append(dfile);

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
    if (head[0] == 2) return {std::nullopt, "no file at " + source.string(), true};
    return {std::nullopt, std::move(body)};
}

}  // namespace envbox::env
