#include "envbox/ops/init.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "envbox/lock/writer.hpp"
#include "envbox/ops/target.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
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

}  // namespace

std::string initial_manifest(const std::string& python_xy, const std::string& platform,
                             const std::optional<std::string>& cuda, const std::string& comment,
                             const std::vector<std::string>& shared_indexes,
                             const std::string& default_index, const std::string& cuda_index) {
    std::string t = "# " + comment + "\n";
    t += "[environment]\n";
    t += "python = \"" + python_xy + "\"\n";
    t += "platform = \"" + platform + "\"\n";
    if (cuda) t += "cuda = \"" + *cuda + "\"\n";
    t += "requirements = []\n";
    std::string cu;
    if (cuda) {
        cu = "pytorch-cu";
        for (char c : *cuda)
            if (c != '.') cu += c;
        t += "\n[[index]]\nname = \"" + cu + "\"\nurl = " +
             lock::toml_string(cuda_index.empty() ? pytorch_index_url(*cuda) : cuda_index) + "\n";
        t += "explicit = true  # serves only the packages pinned to it in [sources]\n";
    }
    if (shared_indexes.empty() || !default_index.empty()) {
        t += "\n[[index]]\nname = \"pypi\"\nurl = " +
             lock::toml_string(default_index.empty() ? "https://pypi.org/simple" : default_index) +
             "\n";
    } else {
        std::string names;
        for (const auto& n : shared_indexes)
            names += (names.empty() ? "" : ", ") + n;
        t += std::string(cuda ? "\n# Then the project's indexes" : "\n# Indexes: the project's") +
             " (" + names + "), from ../envbox.toml\n";
    }
    if (cuda) {
        t += "\n[sources]\n";
        for (const char* p : {"torch", "torchvision", "torchaudio", "triton"})
            t += std::string(p) + " = \"" + cu + "\"\n";
    }
    return t;
}

InitResult init(const Context& ctx, const InitOptions& opt) {
    check_env_name(opt.env);
    if (opt.cuda && *opt.cuda != "12.8" && *opt.cuda != "13.0")
        throw Error(ErrorCode::usage, "--cuda " + *opt.cuda +
                                          ": envbox knows the PyTorch indexes of 12.8 and 13.0 "
                                          "(or none)");
    if (ctx.project_root.empty()) throw Error(ErrorCode::usage, "init: no project directory");
    if (opt.cuda_index && !opt.cuda)
        throw Error(ErrorCode::usage, "--cuda-index needs --cuda (the CUDA line it serves)");
    for (const auto* url : {&opt.default_index, &opt.cuda_index})
        if (*url && !url->value().starts_with("https://") && !url->value().starts_with("http://") &&
            !url->value().starts_with("file://"))
            throw Error(ErrorCode::usage,
                        (url == &opt.default_index ? "--default-index " : "--cuda-index ") +
                            url->value() + ": expected an http(s):// or file:// URL");
    const fs::path dir = ctx.project_root / "manifests";
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
    r.platform = interpreter_platform(r.interpreter, opt.env);
    r.cuda = opt.cuda;
    if (r.cuda) r.cuda_index = opt.cuda_index.value_or(pytorch_index_url(*r.cuda));
    if (auto project = read_project_file(ctx.project_root))
        for (const auto& i : project->indexes)
            r.shared_indexes.push_back(i.name);
    r.text = initial_manifest(
        r.interpreter.version_xy(), r.platform, r.cuda,
        "Written by `envbox init` for CPython " + r.interpreter.full_version + " on " + r.platform +
            "; add requirements, then `envbox create " + opt.env + "`.",
        r.shared_indexes, opt.default_index.value_or(""), opt.cuda_index.value_or(""));
    fs::create_directories(dir, ec);
    if (ec) throw Error(ErrorCode::generic, "cannot create " + dir.string() + ": " + ec.message());
    write_new_file(r.manifest, r.text);
    return r;
}

}  // namespace envbox::ops
