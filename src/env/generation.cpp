#include "envbox/env/generation.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "envbox/env/check_record.hpp"
#include "envbox/env/known_good.hpp"
#include "envbox/pep/digest.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

// Version 1 wrote values as they were, so a value with a blank or a line break (a hostile
// METADATA Version) shifted the fields. Version 2 writes every value percent-encoded (`%`,
// blanks, control characters), so no value can break a line or a field; version 1 records are
// still read, strictly.
constexpr std::string_view kInfoHeaderV1 = "envbox-generation 1";
constexpr std::string_view kInfoHeader = "envbox-generation 2";

std::optional<int> parse_gen_number(const std::string& name) {
    if (!name.starts_with("gen-") || name.size() == 4 || name.size() > 13) return std::nullopt;
    int n = 0;
    for (char c : name.substr(4)) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    return n;
}

}  // namespace

std::string generation_dir_name(int number) {
    return "gen-" + std::to_string(number);
}

namespace {

// Reads the lines of one info record into a Generation; the first damage found is kept, with
// its line number.
class InfoReader {
  public:
    InfoReader(Generation& g, bool v1) : g_(g), v1_(v1) {}

    /// One line after the header ("KEY REST"); unknown keys and lines without a blank are skipped.
    void line(const kv::Line& l) {
        line_number_ = static_cast<int>(l.number);
        if (!l.has_separator) return;
        const std::string key(l.key);
        const std::string_view rest = l.value;
        if (std::string* field = scalar(key))
            *field = value(key, rest);
        else if (key == "direct-url")
            direct_url(rest);
        else if (key == "prefer") {
            const std::string name = value(key, rest);
            for (auto& p : g_.packages)
                if (p.name == name) p.preferred = true;
        } else if (key == "pip-shim")
            g_.pip_shim = true;
        else if (key == "bytecode")
            g_.bytecode.push_back(value(key, rest));
        else if (key == "package")
            package(rest);
    }

  private:
    // The field a one-value key fills, or nullptr.
    std::string* scalar(const std::string& key) {
        if (key == "created") return &g_.created;
        if (key == "lock-digest") return &g_.lock_digest;
        if (key == "lock-source") return &g_.lock_source;
        if (key == "python") return &g_.python;
        if (key == "python-version") return &g_.python_version;
        if (key == "platform") return &g_.platform;
        if (key == "environment") return &g_.environment;
        if (key == "link-mode") return &g_.link_mode;
        return nullptr;
    }

    void damaged(const std::string& why) {
        if (g_.damaged.empty()) g_.damaged = "line " + std::to_string(line_number_) + ": " + why;
    }

    // Fields of a line after its key: v1 values as written, v2 ones decoded.
    std::vector<std::string> fields(std::string_view rest) {
        std::vector<std::string> out;
        for (std::string_view f : kv::split_fields(rest)) {
            auto d = v1_ ? std::optional<std::string>(f) : kv::percent_decode(f);
            if (!d) {
                damaged("bad %-escape");
                return std::vector<std::string>();
            }
            out.push_back(std::move(*d));
        }
        return out;
    }

    // A single value: v1 took the rest of the line (paths with blanks), v2 one field.
    std::string value(const std::string& key, std::string_view rest) {
        if (v1_) return std::string(rest);
        auto f = fields(rest);
        if (f.empty()) return std::string();
        if (f.size() != 1) return damaged("expected one value for " + key), std::string();
        return f[0];
    }

    void direct_url(std::string_view rest) {
        // v1: NAME, then the JSON (which may hold blanks) to the end of the line.
        std::vector<std::string> f;
        if (v1_) {
            auto sp = rest.find(' ');
            if (sp != std::string_view::npos)
                f = {std::string(rest.substr(0, sp)), std::string(rest.substr(sp + 1))};
        } else {
            f = fields(rest);
        }
        if (f.size() != 2) return damaged("bad direct-url line");
        for (auto& p : g_.packages)
            if (p.name == f[0]) p.direct_url = f[1];
    }

    void package(std::string_view rest) {
        // name version wheel-sha256 filename requested|-: anything else is a record that a value
        // broke (an older envbox wrote a hostile Version as it was) and must not be taken for
        // what the generation uses.
        auto f = fields(rest);
        if (f.size() != 5 || !pep::is_sha256_hex(f[2]) || (f[4] != "requested" && f[4] != "-"))
            return damaged("malformed package line");
        GenerationPackage p;
        p.name = f[0];
        p.version = f[1];
        p.wheel_sha256 = f[2];
        p.filename = f[3];
        p.requested = f[4] == "requested";
        g_.packages.push_back(std::move(p));
    }

    Generation& g_;
    const bool v1_;
    int line_number_ = 1;
};

}  // namespace

std::optional<Generation> read_generation(const fs::path& gen_path) {
    auto number = parse_gen_number(gen_path.filename().string());
    if (!number) return std::nullopt;
    Generation g;
    g.number = *number;
    g.path = gen_path;
    std::error_code ec;
    g.complete = fs::exists(gen_path / ".envbox" / "complete", ec);
    fs::path info = gen_path / ".envbox" / "info";
    if (!fs::exists(info, ec)) return g;
    const std::string text = read_file(info);
    // Bounds far above any record envbox writes: a long direct-url line still reads.
    kv::Reader r(text, info.string(), ' ', {.max_line_bytes = 1u << 30, .max_lines = 1u << 30});
    auto head = r.next();
    if (!head || (head->text != kInfoHeader && head->text != kInfoHeaderV1)) {
        g.damaged = "unknown record header";
        return g;
    }
    InfoReader reader(g, head->text == kInfoHeaderV1);
    while (auto l = r.next())
        reader.line(*l);
    return g;
}

std::vector<Generation> list_generations(const fs::path& env_dir) {
    std::vector<Generation> out;
    // The environment's folder itself must not be a link (its parents are the caller's, see
    // ops::env_dir); inside it, `current` is the one link, and no link is taken for a gen-N.
    UniqueFd dir = open_own_dir(env_dir.parent_path(), env_dir.filename());
    if (!dir) return out;
    for (const auto& e : list_own_dir(dir.get(), env_dir))
        if (e.type == OwnEntry::Type::folder)
            if (auto g = read_generation(env_dir / e.name)) out.push_back(std::move(*g));
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.number < b.number; });
    return out;
}

std::optional<Generation> current_generation(const fs::path& env_dir) {
    std::error_code ec;
    fs::path target = fs::read_symlink(env_dir / "current", ec);
    if (ec) return std::nullopt;
    auto g = read_generation(env_dir / target.filename());
    if (!g || !g->complete) return std::nullopt;
    return g;
}

std::optional<std::string> read_generation_lock(const fs::path& gen_path) {
    constexpr std::size_t kMaxLockBytes = 16u << 20;  // the lock reader's own bound
    UniqueFd dir = open_own_dir(gen_path.parent_path(), gen_path.filename() / ".envbox");
    if (!dir) return std::nullopt;
    return read_own_file(dir.get(), gen_path / ".envbox" / "pylock.toml", kMaxLockBytes);
}

void write_generation_record(const Generation& g, const std::string& lock_text) {
    fs::path dir = g.path / ".envbox";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw sys_error("cannot create " + dir.string(), ec);
    // gc keeps what the records name: a package whose wheel is not a digest would be a record
    // that protects nothing.
    for (const auto& p : g.packages)
        if (!pep::is_sha256_hex(p.wheel_sha256) || p.name.empty() || p.version.empty() ||
            p.filename.empty())
            throw Error(ErrorCode::integrity, "cannot record package '" + p.name + "' (" +
                                                  p.filename + ") in generation " +
                                                  std::to_string(g.number) +
                                                  ": incomplete or invalid values");
    auto e = [](std::string_view v) { return kv::percent_encode(v); };
    kv::Writer w(kInfoHeader, ' ', (dir / "info").string());
    w.add("generation", std::to_string(g.number))
        .add("created", e(g.created))
        .add("lock-digest", e(g.lock_digest))
        .add("lock-source", e(g.lock_source))
        .add("python", e(g.python))
        .add("python-version", e(g.python_version))
        .add("platform", e(g.platform))
        .add("environment", e(g.environment))
        .add("link-mode", e(g.link_mode));
    for (const auto& b : g.bytecode)
        w.add("bytecode", e(b));
    if (g.pip_shim) w.add("pip-shim", "yes");
    for (const auto& p : g.packages)
        w.add_fields("package", {e(p.name), e(p.version), p.wheel_sha256, e(p.filename),
                                 p.requested ? "requested" : "-"});
    for (const auto& p : g.packages)
        if (!p.direct_url.empty()) w.add_fields("direct-url", {e(p.name), e(p.direct_url)});
    for (const auto& p : g.packages)
        if (p.preferred) w.add("prefer", e(p.name));
    write_file_atomic(dir / "info", std::move(w).take(), 0444, Durability::none);
    write_file_atomic(dir / "pylock.toml", lock_text, 0444, Durability::none);
    write_file_atomic(in_use_lock_path(g.path), "", 0444, Durability::none);
}

void seal_generation(const fs::path& gen_path, const std::vector<std::string>& dirs,
                     unsigned jobs) {
    std::set<std::string> all(dirs.begin(), dirs.end());
    for (const auto& d : dirs)
        for (auto slash = d.rfind('/'); slash != std::string::npos && slash > 0;
             slash = d.rfind('/', slash - 1))
            if (!all.insert(d.substr(0, slash)).second) break;  // its parents are in already
    all.insert("bin");
    all.insert("include");
    all.insert(".");
    const std::vector<std::string> list(all.begin(), all.end());
    UniqueFd root(::open(gen_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root) throw sys_error("cannot open " + gen_path.string(), errno);
    constexpr std::size_t kChunk = 256;
    parallel_for((list.size() + kChunk - 1) / kChunk, jobs, [&](std::size_t c) {
        const std::size_t end = std::min(list.size(), (c + 1) * kChunk);
        for (std::size_t k = c * kChunk; k < end; ++k)
            // Every name is a directory this create made (mkdirat) below a root opened with
            // O_NOFOLLOW: none is a link.
            if (::fchmodat(root.get(), list[k].c_str(), 0555, 0) != 0 && errno != ENOENT)
                throw sys_error("cannot make " + (gen_path / list[k]).string() + " read-only",
                                errno);
    });
}

void stamp_complete(const fs::path& gen_path) {
    sync_filesystem(gen_path);
    write_file_atomic(gen_path / ".envbox" / "complete", "complete\n", 0444, Durability::fsync);
}

void switch_current(const fs::path& env_dir, int number) {
    fs::path tmp = env_dir / (".current.tmp." + std::to_string(::getpid()));
    std::error_code ec;
    fs::remove(tmp, ec);
    fs::create_symlink(generation_dir_name(number), tmp, ec);
    if (ec) throw sys_error("cannot create " + tmp.string(), ec);
    if (::rename(tmp.c_str(), (env_dir / "current").c_str()) != 0) {
        int err = errno;
        fs::remove(tmp, ec);
        throw sys_error("cannot switch " + (env_dir / "current").string(), err);
    }
    UniqueFd dir(::open(env_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir) ::fsync(dir.get());
}

// ---- generations in use ------------------------------------------------------------------

fs::path in_use_lock_path(const fs::path& gen_path) {
    return gen_path / ".envbox" / "in-use";
}

std::optional<Generation> hold_generation(const Generation& gen) {
    const fs::path lock = in_use_lock_path(gen.path);
    // No O_CLOEXEC: the command exec'd in the generation, and its children, inherit the
    // descriptor and with it the lock. O_CREAT only for generations built before the lock
    // file existed. An empty file nothing reads, not the generation's directory: through
    // the inherited descriptor (opened before the sandbox's read-only mounts) a command
    // reaches nothing that matters.
    UniqueFd fd(::open(lock.c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW, 0444));
    if (!fd && errno == ENOENT) return std::nullopt;  // the whole tree went meanwhile
    if (!fd) fd.reset(::open(lock.c_str(), O_RDONLY | O_NOFOLLOW));
    if (!fd) return gen;  // cannot be held here: the /proc scan still finds the job
    int rc;
    while ((rc = ::flock(fd.get(), LOCK_SH)) != 0 && errno == EINTR) {
    }
    // gc removes the stamp first, holding the lock: a stamp seen now stays while we hold it.
    std::error_code ec;
    if (rc != 0 || fs::exists(gen.path / ".envbox" / "complete", ec)) {
        (void)fd.release();  // held until this process (or what it execs) ends
        return gen;
    }
    return std::nullopt;
}

std::optional<Generation> hold_current_generation(const fs::path& env_dir) {
    // Each retry means a gc removed the generation just read, which it does only after
    // `current` has moved on: a few tries are plenty.
    for (int attempt = 0; attempt < 8; ++attempt) {
        auto gen = current_generation(env_dir);
        if (!gen) return std::nullopt;
        if (auto held = hold_generation(*gen)) return held;
    }
    throw Error(ErrorCode::generic,
                "the current generation of " + env_dir.string() +
                    " was removed again and again while envbox tried to run in it");
}

GenerationClaim::GenerationClaim(const fs::path& gen_path) {
    const fs::path lock = in_use_lock_path(gen_path);
    fd_.reset(::open(lock.c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0444));
    if (!fd_) fd_.reset(::open(lock.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    // No lock file and none can be made (an unfinished generation without .envbox/): no job can
    // hold it either, since a job holds only a stamped generation.
    if (!fd_) {
        claimed_ = true;
        return;
    }
    // EWOULDBLOCK: a job holds it. A filesystem without locks (ENOLCK) fails the jobs' lock
    // too, which then rely on the /proc scan alone.
    claimed_ = ::flock(fd_.get(), LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK;
}

GenerationClaim::~GenerationClaim() = default;

void remove_generation(const fs::path& gen_path) {
    // No link is followed below the environment's folder (docs/SECURITY.md, the link rule).
    const fs::path env_dir = gen_path.parent_path();
    if (UniqueFd meta = open_own_dir(env_dir, gen_path.filename() / ".envbox"))
        if (::unlinkat(meta.get(), "complete", 0) != 0 && errno != ENOENT)
            throw sys_error("cannot remove " + (gen_path / ".envbox" / "complete").string(), errno);
    // A job that opened the lock file just as its name went (see hold_current_generation) may
    // have made a new one in .envbox/ while the tree was being removed: one more pass finds it.
    for (int pass = 0;; ++pass) {
        try {
            remove_own_tree(env_dir, gen_path);
            break;
        } catch (const Error& e) {
            if (pass == 1 || e.code() != ErrorCode::generic || e.sys_errno() != ENOTEMPTY) throw;
        }
    }
    // Its check record (check_record.hpp) goes with it: a later generation of the same number
    // must not inherit it.
    const std::string name = gen_path.filename().string();
    if (auto n = parse_generation_number(std::string_view(name).substr(name.find('-') + 1)))
        remove_check_record(env_dir, *n);
}

namespace {

// `path` is `dir` or lies below it: exact path components, so gen-1 never claims gen-10.
bool is_under(std::string_view path, std::string_view dir) {
    return path.starts_with(dir) && (path.size() == dir.size() || path[dir.size()] == '/');
}

std::string read_link(const std::string& path) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// A /proc file (they report no size), at most `limit` bytes; empty when it cannot be read.
std::string read_proc_file(const std::string& path, std::size_t limit) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return {};
    std::string out;
    char buf[65536];
    while (out.size() < limit) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

// Calls `f` with each line (maps) or NUL-terminated entry (environ) of `text`.
template <typename F>
void for_each_record(std::string_view text, char sep, F&& f) {
    while (!text.empty()) {
        auto end = text.find(sep);
        f(text.substr(0, end));
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
}

}  // namespace

RuntimeRoots::RuntimeRoots(const std::vector<fs::path>& generation_dirs, const fs::path& proc) {
    std::vector<std::string> gens;
    for (const auto& d : generation_dirs) {
        std::error_code ec;
        fs::path c = fs::weakly_canonical(d, ec);
        gens.push_back((ec ? d : c).string());
    }
    DIR* procdir = gens.empty() ? nullptr : ::opendir(proc.c_str());
    if (!procdir) return;
    const std::string self = std::to_string(::getpid());
    std::set<std::string> found;
    while (dirent* e = ::readdir(procdir)) {
        const std::string pid = e->d_name;
        if (pid == self || pid.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string base = proc.string() + "/" + pid + "/";
        // `how` reads after "pid N (comm), ": "which runs %s", with %s the path.
        auto note = [&](std::string_view path, std::string_view how) {
            for (const auto& g : gens) {
                if (found.count(g) || !is_under(path, g)) continue;
                found.insert(g);
                std::string comm = read_proc_file(base + "comm", 64);
                if (!comm.empty() && comm.back() == '\n') comm.pop_back();
                std::string text(how);
                text.replace(text.find("%s"), 2, path);
                users_.emplace_back(g, "pid " + pid + " (" + comm + "), " + text);
            }
        };
        note(read_link(base + "exe"), "which runs %s");
        note(read_link(base + "cwd"), "whose working directory is %s");
        note(read_link(base + "root"), "whose root is %s");
        if (DIR* fds = ::opendir((base + "fd").c_str())) {
            while (dirent* f = ::readdir(fds))
                if (f->d_name[0] != '.')
                    note(read_link(base + "fd/" + f->d_name), "which has %s open");
            ::closedir(fds);
        }
        // Mapped libraries: the path is the last field, from its first '/' to the line's end.
        for_each_record(read_proc_file(base + "maps", 64 << 20), '\n', [&](std::string_view line) {
            if (auto slash = line.find('/'); slash != std::string_view::npos)
                note(line.substr(slash), "which maps %s");
        });
        // The environment it started with: VIRTUAL_ENV, PATH entries, any path-valued variable.
        for_each_record(read_proc_file(base + "environ", 4 << 20), '\0',
                        [&](std::string_view entry) {
                            auto eq = entry.find('=');
                            if (eq == std::string_view::npos) return;
                            for_each_record(entry.substr(eq + 1), ':', [&](std::string_view value) {
                                if (value.starts_with('/'))
                                    note(value, "whose environment names %s");
                            });
                        });
        if (found.size() == gens.size()) break;
    }
    ::closedir(procdir);
}

std::optional<std::string> RuntimeRoots::user_of(const fs::path& gen_path) const {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(gen_path, ec);
    const std::string key = (ec ? gen_path : c).string();
    for (const auto& [g, who] : users_)
        if (g == key) return who;
    return std::nullopt;
}

}  // namespace envbox::env
