#include "envbox/ops/init.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "envbox/install/target.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/pep/tags.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/unique_fd.hpp"
#include "init_from.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

// "3.12" → 3, 12; false for anything else.
bool parse_python(const std::string& text, int& major, int& minor) {
    auto dot = text.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == text.size() || text.size() > 8)
        return false;
    for (std::size_t i = 0; i < text.size(); ++i)
        if (i != dot && (text[i] < '0' || text[i] > '9')) return false;
    major = std::stoi(text.substr(0, dot));
    minor = std::stoi(text.substr(dot + 1));
    return major == 3;
}

// The PyTorch wheel index of a CUDA line ("12.8" → cu128).
std::string pytorch_index_url(const std::string& cuda) {
    std::string digits;
    for (char c : cuda)
        if (c != '.') digits += c;
    return "https://download.pytorch.org/whl/cu" + digits;
}

// Publishes `text` at `path` only if nothing is there: written to a temporary file beside it,
// then linked to the final name (EEXIST when taken, even by a racing init), then unlinked.
void write_new_file(const fs::path& path, const std::string& text) {
    fs::path tmp = path;
    tmp += ".tmp-" + std::to_string(::getpid());
    write_file_atomic(tmp, text);
    int rc = ::link(tmp.c_str(), path.c_str());
    int err = errno;
    ::unlink(tmp.c_str());
    if (rc == 0) return;
    if (err == EEXIST)
        throw Error(ErrorCode::generic,
                    path.string() +
                        " already exists; envbox init never replaces a manifest "
                        "(edit it, or remove it first)");
    throw Error(ErrorCode::generic, "cannot write " + path.string() + ": " + std::strerror(err));
}

// PyTorch's own Linux wheels (x86_64 and aarch64) are manylinux_2_28: the glibc a manifest
// asks for unless this machine's is older.
constexpr int kFloorMajor = 2, kFloorMinor = 28;

// "2.36" → 2, 36; false for anything else.
bool parse_glibc(const std::string& text, int& major, int& minor) {
    char tail = 0;
    return std::sscanf(text.c_str(), "%d.%d%c", &major, &minor, &tail) == 2;
}

// "manylinux_2_36_x86_64" → 2, 36, "x86_64"; false for any other tag.
bool parse_manylinux(const std::string& tag, int& major, int& minor, std::string& arch) {
    int used = 0;
    if (std::sscanf(tag.c_str(), "manylinux_%d_%d_%n", &major, &minor, &used) != 2 || used == 0)
        return false;
    arch = tag.substr(static_cast<std::size_t>(used));
    return !arch.empty();
}

bool newer(int major, int minor, int than_major, int than_minor) {
    return major > than_major || (major == than_major && minor > than_minor);
}

// "platform TAG (--platform…)": a tag the user chose, with a warning when this machine's glibc
// is older than it asks for (what the lock picks may not run where it was written).
std::string chosen_platform_note(const std::string& tag, const env::Interpreter& interpreter) {
    int want_major = 0, want_minor = 0, have_major = 0, have_minor = 0;
    std::string arch;
    std::string note = "platform " + tag + " (--platform";
    if (parse_manylinux(tag, want_major, want_minor, arch) &&
        parse_glibc(interpreter.glibc, have_major, have_minor) &&
        newer(want_major, want_minor, have_major, have_minor))
        note += "; this machine has glibc " + interpreter.glibc +
                ": what the lock picks for it may not run here";
    return note + ")";
}

// Whether a line of `text` gives the locks' pattern the `pylock` diff driver, however spaced
// and whatever other attributes it sets.
bool has_lock_diff_line(const std::string& text) {
    auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
    for (std::size_t start = 0; start < text.size();) {
        std::size_t end = std::min(text.find('\n', start), text.size());
        std::vector<std::string> words;
        for (std::size_t i = start; i < end;) {
            while (i < end && blank(text[i]))
                ++i;
            std::size_t j = i;
            while (j < end && !blank(text[j]))
                ++j;
            if (j > i) words.push_back(text.substr(i, j - i));
            i = j;
        }
        if (words.size() > 1 && words[0] == "manifests/pylock.*.toml" &&
            std::find(words.begin() + 1, words.end(), "diff=pylock") != words.end())
            return true;
        start = end + 1;
    }
    return false;
}

// Appends kLockDiffAttribute to `path` unless it has it. Opened without following a link and
// only as a regular file of a sane size: a link planted there (to ~/.bashrc, say) is never
// written through, a FIFO never blocks. An exclusive flock keeps two inits from both appending.
LockDiffAttribute add_lock_diff_attribute(const fs::path& path, std::string& problem) {
    constexpr off_t kMaxBytes = 1 << 20;  // a real .gitattributes is a few lines
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
    struct stat st {};
    if (!fd)
        problem = errno == ELOOP ? "it is a symbolic link" : std::strerror(errno);
    else if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        problem = "it is not a regular file";
    else if (st.st_size > kMaxBytes)
        problem = "it is larger than 1 MiB";
    if (!problem.empty()) return LockDiffAttribute::refused;
    ::flock(fd.get(), LOCK_EX);
    std::string text;
    char buf[8192];
    for (ssize_t n; text.size() <= kMaxBytes && (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            problem = std::strerror(errno);
            return LockDiffAttribute::refused;
        }
        text.append(buf, static_cast<std::size_t>(n));
    }
    if (has_lock_diff_line(text)) return LockDiffAttribute::present;
    const std::string line =
        std::string(text.empty() || text.back() == '\n' ? "" : "\n") + kLockDiffAttribute + "\n";
    if (::lseek(fd.get(), 0, SEEK_END) < 0 || !write_all_fd(fd.get(), line.data(), line.size())) {
        problem = std::strerror(errno);
        return LockDiffAttribute::refused;
    }
    return LockDiffAttribute::added;
}

}  // namespace

DefaultPlatform default_platform(const env::Interpreter& interpreter, const std::string& env) {
    if (interpreter.glibc.empty()) {
        auto m = interpreter.markers.values.find("platform_machine");
        const std::string machine = m != interpreter.markers.values.end() ? m->second : "x86_64";
        throw Error(ErrorCode::invalid_input, "cannot tell this machine's platform (" +
                                                  interpreter.executable.string() +
                                                  " reports no glibc); give one: `envbox init " +
                                                  env + " --platform TAG` (musllinux_1_2_" +
                                                  machine + ", manylinux_2_28_" + machine + ", …)");
    }
    const std::string mine = install::interpreter_platform(interpreter, env);
    int major = 0, minor = 0, tag_major = 0, tag_minor = 0;
    std::string arch;
    if (parse_glibc(interpreter.glibc, major, minor) &&
        parse_manylinux(mine, tag_major, tag_minor, arch) &&
        newer(major, minor, kFloorMajor, kFloorMinor)) {
        const std::string floor = "manylinux_" + std::to_string(kFloorMajor) + "_" +
                                  std::to_string(kFloorMinor) + "_" + arch;
        // An architecture whose manylinux range starts above the floor keeps its own tag.
        if (pep::target_platforms(floor))
            return {floor, "platform " + floor + " (PyTorch's floor; this machine has glibc " +
                               interpreter.glibc + ": --platform " + mine +
                               " for this machine only)"};
    }
    // Older than the floor, or a glibc the probe reported in another shape: this machine's.
    std::string why = "this machine's: glibc " + interpreter.glibc;
    if (major == kFloorMajor && minor == kFloorMinor)
        why += ", PyTorch's floor";
    else if (!newer(major, minor, kFloorMajor, kFloorMinor))
        why += ", older than PyTorch's floor " + std::to_string(kFloorMajor) + "." +
               std::to_string(kFloorMinor);
    return {mine, "platform " + mine + " (" + why + ")"};
}

namespace {

// The name init gives the PyTorch index of a CUDA line ("12.8" → pytorch-cu128).
std::string pytorch_index_name(const std::string& cuda) {
    std::string cu = "pytorch-cu";
    for (char c : cuda)
        if (c != '.') cu += c;
    return cu;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether the manifest writes its own PyTorch index / PyPI entry: not when the project file
// has an index of that name and no flag gives a URL (a same-named manifest index would hide
// the project's mirror); PyPI not when the project gives any index.
bool own_cuda_index(const std::vector<std::string>& project, const std::optional<std::string>& cuda,
                    const std::string& cuda_index) {
    return cuda && (!cuda_index.empty() || !has(project, pytorch_index_name(*cuda)));
}
bool own_default_index(const std::vector<std::string>& project, const std::string& default_index) {
    return project.empty() || !default_index.empty();
}

}  // namespace

std::vector<std::string> project_indexes_used(const std::vector<std::string>& project,
                                              const std::optional<std::string>& cuda,
                                              const std::string& default_index,
                                              const std::string& cuda_index) {
    std::vector<std::string> used;
    for (const auto& n : project) {
        if (own_cuda_index(project, cuda, cuda_index) && n == pytorch_index_name(*cuda)) continue;
        if (own_default_index(project, default_index) && n == "pypi") continue;
        used.push_back(n);
    }
    return used;
}

std::string initial_manifest(const std::string& python_xy, const std::string& platform,
                             const std::string& comment, const IndexChoice& choice) {
    const std::optional<std::string>& cuda = choice.cuda;
    const std::vector<std::string>& project_indexes = choice.project_indexes;
    const std::string& default_index = choice.default_index;
    const std::string& cuda_index = choice.cuda_index;
    std::string t = "# " + comment + "\n";
    t += "[environment]\n";
    t += "python = \"" + python_xy + "\"\n";
    t += "platform = \"" + platform + "\"\n";
    if (cuda) t += "cuda = \"" + *cuda + "\"\n";
    t += "requirements = []\n";
    bool own = false;
    if (own_cuda_index(project_indexes, cuda, cuda_index)) {
        t += "\n[[index]]\nname = \"" + pytorch_index_name(*cuda) + "\"\nurl = " +
             lock::toml_string(cuda_index.empty() ? pytorch_index_url(*cuda) : cuda_index) + "\n";
        t += "explicit = true  # serves only the packages pinned to it in [sources]\n";
        own = true;
    }
    if (own_default_index(project_indexes, default_index)) {
        t += "\n[[index]]\nname = \"pypi\"\nurl = " +
             lock::toml_string(default_index.empty() ? "https://pypi.org/simple" : default_index) +
             "\n";
        own = true;
    }
    const auto used = project_indexes_used(project_indexes, cuda, default_index, cuda_index);
    if (!used.empty()) {
        std::string names;
        for (const auto& n : used)
            names += (names.empty() ? "" : ", ") + n;
        t += std::string(own ? "\n# Then the project's indexes" : "\n# Indexes: the project's") +
             " (" + names + "), from ../envbox.toml\n";
    }
    if (cuda) {
        t += "\n[sources]\n";
        for (const char* p : {"torch", "torchvision", "torchaudio", "triton"})
            t += std::string(p) + " = \"" + pytorch_index_name(*cuda) + "\"\n";
    }
    return t;
}

namespace {

std::string toml_array(const std::vector<std::string>& items) {
    if (items.empty()) return "[]";
    std::string out = "[\n";
    for (const auto& i : items)
        out += "    " + lock::toml_string(i) + ",\n";
    return out + "]";
}

// `text` (initial_manifest's) with what `im` says: its requirements and constraints, its extra
// indexes after the manifest's, its editable folders in [sources] (the last table when there is
// one, else a new one).
std::string with_imported(std::string text, const Imported& im) {
    const std::string empty = "requirements = []\n";
    std::string env_lines = "requirements = " + toml_array(im.requirements) + "\n";
    if (!im.constraints.empty()) env_lines += "constraints = " + toml_array(im.constraints) + "\n";
    text.replace(text.find(empty), empty.size(), env_lines);
    const auto sources = text.find("\n[sources]\n");
    std::string indexes;
    for (std::size_t i = 0; i < im.extra_indexes.size(); ++i)
        indexes += "\n[[index]]\nname = \"extra-" + std::to_string(i + 1) +
                   "\"\nurl = " + lock::toml_string(im.extra_indexes[i]) + "\n";
    if (sources == std::string::npos)
        text += indexes;
    else
        text.insert(sources, indexes);
    if (!im.editables.empty() && text.find("\n[sources]\n") == std::string::npos)
        text += "\n[sources]\n";
    for (const auto& e : im.editables)
        text += (e.name.find('.') == std::string::npos ? e.name : lock::toml_string(e.name)) +
                " = { path = " + lock::toml_string(e.path) + ", editable = true }\n";
    return text;
}

// The URL of the index named pypi: --default-index, else a --from file's --index-url.
std::string default_index_of(const InitOptions& opt, const std::optional<Imported>& imported) {
    if (opt.default_index || !imported || !imported->index_url)
        return opt.default_index.value_or("");
    if (auto problem = index_url_problem(*imported->index_url, "pypi"))
        throw Error(ErrorCode::invalid_input, opt.from->string() + ": --index-url" + *problem);
    return *imported->index_url;
}

// `r.text` with what `--from` gave (`im`), checked to read as a manifest before it is written.
void take_imported(const Context& ctx, const InitOptions& opt, const Imported& im, InitResult& r) {
    for (std::size_t i = 0; i < im.extra_indexes.size(); ++i)
        if (auto problem = index_url_problem(im.extra_indexes[i], "extra-" + std::to_string(i + 1)))
            throw Error(ErrorCode::invalid_input, opt.from->string() + ": " + *problem);
    r.text = with_imported(std::move(r.text), im);
    r.imported = im.requirements.size();
    r.untranslated = im.untranslated;
    const auto project = read_project_file(ctx.project_root);
    auto parsed = lock::Manifest::parse(r.text, r.manifest.string(), project ? &*project : nullptr);
    if (!parsed)
        throw Error(ErrorCode::invalid_input, "the manifest made from " + opt.from->string() +
                                                  " does not read: " + parsed.error().message());
}

}  // namespace

InitResult init(const Context& ctx, const InitOptions& opt) {
    check_env_name(opt.env);
    if (opt.cuda && *opt.cuda != "12.8" && *opt.cuda != "13.0")
        throw Error(ErrorCode::usage, "--cuda " + *opt.cuda +
                                          ": envbox knows the PyTorch indexes of 12.8 and 13.0 "
                                          "(or none)");
    if (ctx.project_root.empty()) throw Error(ErrorCode::usage, "init: no project directory");
    if (opt.cuda_index && !opt.cuda)
        throw Error(ErrorCode::usage, "--cuda-index needs --cuda (the CUDA line it serves)");
    // The rule `lock` and `create` apply to the manifest's URLs: a manifest init writes is one
    // every later command reads.
    if (opt.default_index)
        if (auto problem = index_url_problem(*opt.default_index, "pypi"))
            throw Error(ErrorCode::usage, "--default-index" + *problem);
    if (opt.cuda_index)
        if (auto problem = index_url_problem(*opt.cuda_index, pytorch_index_name(*opt.cuda)))
            throw Error(ErrorCode::usage, "--cuda-index" + *problem);
    // The rule the manifest reader applies to `platform`.
    if (opt.platform)
        if (auto tags = pep::target_platforms(*opt.platform); !tags)
            throw Error(ErrorCode::usage, "--platform: " + tags.error().message());
    const fs::path dir = ctx.project().manifests();
    InitResult r;
    r.manifest = dir / (opt.env + ".toml");
    std::error_code ec;
    // Said before an interpreter is looked for: the refusal must not depend on the machine.
    if (fs::symlink_status(r.manifest, ec).type() != fs::file_type::not_found)
        throw Error(ErrorCode::generic,
                    r.manifest.string() +
                        " already exists; envbox init never replaces a manifest "
                        "(edit it, or remove it first)");
    const fs::path probe_cache = store::Home(ctx.home).interpreters();
    if (opt.python) {
        int major = 0, minor = 0;
        if (!parse_python(*opt.python, major, minor))
            throw Error(ErrorCode::usage,
                        "--python " + *opt.python + ": expected a CPython version such as 3.12");
        r.interpreter = env::find_interpreter(major, minor, false, probe_cache,
                                              interpreter_search(ctx.settings));
    } else {
        r.interpreter = env::default_interpreter(probe_cache, interpreter_search(ctx.settings));
    }
    if (opt.platform) {
        r.platform = *opt.platform;
        r.platform_note = chosen_platform_note(r.platform, r.interpreter);
    } else {
        DefaultPlatform chosen = default_platform(r.interpreter, opt.env);
        r.platform = std::move(chosen.tag);
        r.platform_note = std::move(chosen.note);
    }
    r.cuda = opt.cuda;
    if (r.cuda) r.cuda_index = opt.cuda_index.value_or(pytorch_index_url(*r.cuda));
    std::vector<std::string> project_indexes;
    if (auto project = read_project_file(ctx.project_root))
        for (const auto& i : project->indexes)
            project_indexes.push_back(i.name);
    std::optional<Imported> imported;
    if (opt.from) imported = import_environment(*opt.from, dir);
    const std::string default_index = default_index_of(opt, imported);
    const std::string cuda_index = opt.cuda_index.value_or("");
    r.text = initial_manifest(r.interpreter.version_xy(), r.platform,
                              "Written by `envbox init` for CPython " + r.interpreter.full_version +
                                  " on " + r.platform + "; add requirements, then `envbox create " +
                                  opt.env + "`.",
                              {r.cuda, project_indexes, default_index, cuda_index});
    if (imported) take_imported(ctx, opt, *imported, r);
    r.shared_indexes = project_indexes_used(project_indexes, r.cuda, default_index, cuda_index);
    if (r.cuda && !own_cuda_index(project_indexes, r.cuda, cuda_index))
        r.cuda_index = "index " + pytorch_index_name(*r.cuda) + " of envbox.toml";
    fs::create_directories(dir, ec);
    if (ec) throw Error(ErrorCode::generic, "cannot create " + dir.string() + ": " + ec.message());
    write_new_file(r.manifest, r.text);
    (void)ensure_project_identity(ctx.project_root);  // its environments follow it when moved
    r.gitattributes = ctx.project_root / ".gitattributes";
    r.lock_diff = add_lock_diff_attribute(r.gitattributes, r.lock_diff_problem);
    return r;
}

}  // namespace envbox::ops
