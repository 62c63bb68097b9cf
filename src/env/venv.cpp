#include "envbox/env/venv.hpp"

#include <unistd.h>

#include "envbox/pep/wheel.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

void make_dirs(const fs::path& p) {
    std::error_code ec;
    fs::create_directories(p, ec);
    if (ec) throw sys_error("cannot create " + p.string(), ec);
}

void symlink_to(const fs::path& target, const fs::path& link) {
    std::error_code ec;
    fs::create_symlink(target, link, ec);
    if (ec) throw sys_error("cannot create symlink " + link.string(), ec);
}

// A POSIX-shell activate script, as users of venv expect (`source bin/activate`, `deactivate`).
std::string activate_script(const fs::path& root, const std::string& prompt) {
    return R"SH(# Source this file from bash or zsh: . bin/activate   (written by envbox)
deactivate () {
    if [ -n "${_OLD_VIRTUAL_PATH:-}" ]; then PATH="$_OLD_VIRTUAL_PATH"; export PATH; unset _OLD_VIRTUAL_PATH; fi
    if [ -n "${_OLD_VIRTUAL_PYTHONHOME:-}" ]; then PYTHONHOME="$_OLD_VIRTUAL_PYTHONHOME"; export PYTHONHOME; unset _OLD_VIRTUAL_PYTHONHOME; fi
    if [ -n "${_OLD_VIRTUAL_PS1:-}" ]; then PS1="$_OLD_VIRTUAL_PS1"; export PS1; unset _OLD_VIRTUAL_PS1; fi
    unset VIRTUAL_ENV VIRTUAL_ENV_PROMPT
    hash -r 2>/dev/null
    if [ ! "${1:-}" = "nondestructive" ]; then unset -f deactivate; fi
}
deactivate nondestructive
VIRTUAL_ENV=)SH" +
           pep::sh_quote(root.string()) + R"SH(
export VIRTUAL_ENV
_OLD_VIRTUAL_PATH="$PATH"
PATH="$VIRTUAL_ENV/bin:$PATH"
export PATH
if [ -n "${PYTHONHOME:-}" ]; then _OLD_VIRTUAL_PYTHONHOME="$PYTHONHOME"; unset PYTHONHOME; fi
VIRTUAL_ENV_PROMPT=)SH" +
           pep::sh_quote(prompt) + R"SH(
export VIRTUAL_ENV_PROMPT
if [ -z "${VIRTUAL_ENV_DISABLE_PROMPT:-}" ]; then _OLD_VIRTUAL_PS1="${PS1:-}"; PS1="($VIRTUAL_ENV_PROMPT) ${PS1:-}"; export PS1; fi
hash -r 2>/dev/null
)SH";
}

}  // namespace

VenvLayout VenvLayout::of(const Interpreter& in, const fs::path& root) {
    auto at = [&](const char* key, const char* fallback) {
        auto it = in.scheme.find(key);
        return (root / (it == in.scheme.end() ? std::string(fallback) : it->second))
            .lexically_normal();
    };
    const std::string lib = "lib/python" + in.version_xy() + (in.free_threaded() ? "t" : "");
    VenvLayout l;
    l.root = root;
    l.purelib = at("purelib", (lib + "/site-packages").c_str());
    l.platlib = at("platlib", (lib + "/site-packages").c_str());
    l.scripts = at("scripts", "bin");
    l.data = at("data", ".");
    l.headers_base = root / "include" / "site" / ("python" + in.version_xy());
    l.python = l.scripts / "python";
    return l;
}

std::vector<VenvEntry> venv_skeleton(const Interpreter& in, const fs::path& root,
                                     const std::string& prompt) {
    VenvLayout l = VenvLayout::of(in, root);
    const std::string bin = l.scripts.lexically_relative(root).string();
    std::vector<VenvEntry> out;
    if (l.purelib.string().starts_with((root / "lib").string() + "/"))
        out.push_back({"lib64", "", "lib", 0777});
    out.push_back({bin + "/python", "", in.executable.string(), 0777});
    out.push_back({bin + "/python" + std::to_string(in.major), "", "python", 0777});
    out.push_back({bin + "/python" + in.version_xy(), "", "python", 0777});
    out.push_back({"pyvenv.cfg",
                   "home = " + in.executable.parent_path().string() +
                       "\ninclude-system-site-packages = false\nversion = " + in.full_version +
                       "\nexecutable = " + in.executable.string() + "\nprompt = " + prompt +
                       "\nenvbox = " ENVBOX_VERSION "\n",
                   "", 0644});
    out.push_back({bin + "/activate", activate_script(root, prompt), "", 0644});
    return out;
}

VenvLayout create_venv(const Interpreter& in, const fs::path& root, const std::string& prompt) {
    VenvLayout l = VenvLayout::of(in, root);
    make_dirs(l.scripts);
    make_dirs(l.purelib);
    make_dirs(l.platlib);
    make_dirs(root / "include");
    for (const auto& e : venv_skeleton(in, root, prompt)) {
        if (!e.symlink_target.empty())
            symlink_to(e.symlink_target, root / e.rel);
        else
            write_file_atomic(root / e.rel, e.content, e.mode, Durability::none);
    }
    return l;
}

}  // namespace envbox::env
