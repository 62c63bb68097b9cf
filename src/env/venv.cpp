#include "envbox/env/venv.hpp"

#include <unistd.h>

#include <cstdio>

#include "envbox/pep/name.hpp"
#include "envbox/pep/wheel.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "pip_shim.hpp"

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

// `text` as a Python expression for the str whose bytes it is (`os.fsdecode(b"…")`): every
// byte a name or path may hold survives, and none can end the literal.
std::string py_text(std::string_view text) {
    std::string out = "os.fsdecode(b\"";
    for (unsigned char c : text) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        }
    }
    return out + "\")";
}

// envbox's pip (contract in venv.hpp): the launchers, the package and its __pycache__ stand-in.
void add_pip_shim(const Interpreter& in, const VenvLayout& l, const std::string& env,
                  std::vector<VenvEntry>& out) {
    const std::string bin = l.scripts.lexically_relative(l.root).string();
    const std::string pkg = (l.purelib / "pip").lexically_relative(l.root).string();
    const std::string launcher = pep::launcher_script({"pip", "pip", "main"}, l.python.string());
    for (const std::string& name :
         {std::string("pip"), "pip" + std::to_string(in.major), "pip" + in.version_xy()})
        out.push_back({bin + "/" + name, launcher, "", 0755});
    std::string code(pip_shim_code());
    const std::string generated = "ENV = " + py_text(env) + "\nSITE_DIRS = (\".\", " +
                                  py_text(l.platlib.lexically_relative(l.purelib).string()) + ")\n";
    code.replace(code.find(kPipShimGenerated), kPipShimGenerated.size(), generated);
    out.push_back({pkg + "/__init__.py", code, "", 0644});
    out.push_back({pkg + "/__main__.py",
                   "# envbox's pip (see __init__.py) for `python -m pip`.\nimport sys\n\nfrom pip "
                   "import main\n\nsys.exit(main())\n",
                   "", 0644});
    out.push_back({pkg + "/__pycache__",
                   "envbox: this file stands where Python would write the bytecode of envbox's "
                   "pip, so that it writes none when the environment's python runs outside "
                   "`envbox run`.\n",
                   "", 0444});
}

}  // namespace

bool wants_pip_shim(const std::vector<GenerationPackage>& packages) {
    for (const auto& p : packages)
        if (pep::canonicalize_name(p.name) == "pip") return false;
    return true;
}

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
                                     const std::string& prompt,
                                     const std::vector<GenerationPackage>& packages) {
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
    if (wants_pip_shim(packages)) add_pip_shim(in, l, prompt, out);
    return out;
}

VenvLayout create_venv(const Interpreter& in, const fs::path& root, const std::string& prompt,
                       const std::vector<GenerationPackage>& packages) {
    VenvLayout l = VenvLayout::of(in, root);
    make_dirs(l.scripts);
    make_dirs(l.purelib);
    make_dirs(l.platlib);
    make_dirs(root / "include");
    for (const auto& e : venv_skeleton(in, root, prompt, packages)) {
        make_dirs((root / e.rel).parent_path());
        if (!e.symlink_target.empty())
            symlink_to(e.symlink_target, root / e.rel);
        else
            write_file_atomic(root / e.rel, e.content, e.mode, Durability::none);
    }
    return l;
}

}  // namespace envbox::env
