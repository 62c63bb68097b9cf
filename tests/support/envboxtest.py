"""What envbox's black-box Python tests share: running the real envbox binary, the projects
and manifests it runs on, and the trees, digests and lock texts the tests compare.

A test file reaches this folder and tools/ (wheelgen) with one line, then imports by name:

    HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
    from envboxtest import PYTHON, Project, envbox, keep_or_remove  # noqa: E402

and ends with

    if __name__ == "__main__":
        ENVBOX = envboxtest.take_binary()  # the binary named first on the command line
        unittest.main(verbosity=1)

(the local ENVBOX only where the file starts processes itself, with Popen). The HTTP servers
on 127.0.0.1 are in httpserver.py beside this file.

Environment: ENVBOX_TEST_PYTHON names the interpreter envbox is given as ENVBOX_PYTHON
(default /usr/bin/python3, never a pyenv one); ENVBOX_TEST_KEEP=1 keeps temporary folders.
Standard library and tools/wheelgen.py only.
"""
import glob
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from wheelgen import Wheel, sha256_file, write_lock  # noqa: E402,F401  (sha256_file is shared from here)

SUPPORT = os.path.dirname(os.path.abspath(__file__))
ENVBOX = None  # the binary under test: set by take_binary()
PYTHON = os.environ.get("ENVBOX_TEST_PYTHON", "/usr/bin/python3")
PYV = "%d.%d" % sys.version_info[:2]
DEBIAN_WHEELS = sorted(glob.glob("/usr/share/python-wheels/*.whl"))
PIP_WHEEL = next((w for w in DEBIAN_WHEELS if os.path.basename(w).startswith("pip-")), None)
GOLDEN = os.path.join(SUPPORT, "..", "lock", "golden")


def take_binary(argv=sys.argv):
    """Takes the envbox binary from argv[1] (removing it, so unittest sees its own arguments),
    makes it the one every helper here runs, and returns its absolute path."""
    global ENVBOX
    ENVBOX = os.path.abspath(argv.pop(1))
    return ENVBOX


# --- running envbox -------------------------------------------------------------------------

def envbox_env(env=None, drop=()):
    """The environment envbox runs in: the caller's, ENVBOX_PYTHON=PYTHON, without the `drop`
    variables, with `env` on top."""
    e = dict(os.environ, ENVBOX_PYTHON=PYTHON)
    for k in drop:
        e.pop(k, None)
    e.update(env or {})
    return e


def envbox_cmd(home, project=None):
    """The command line up to the subcommand: the binary, --home and (if given) --project."""
    return [ENVBOX, "--home", home] + (["--project", project] if project else [])


def envbox(*args, home, project=None, check=True, env=None, drop=(), prefix=(), stdin=None, **run):
    """Runs envbox to completion and returns the subprocess.CompletedProcess (text stdout and
    stderr). `check`: a non-zero exit raises AssertionError with both outputs. `prefix` goes
    before the binary (setpriv, unshare); `stdin` is the text fed to it; `run` passes on to
    subprocess.run (cwd, timeout, preexec_fn)."""
    cmd = list(prefix) + envbox_cmd(home, project) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, env=envbox_env(env, drop), input=stdin, **run)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} exited {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def keep_or_remove(path):
    """Removes a test's temporary folder, or keeps it (and says so) under ENVBOX_TEST_KEEP."""
    if os.environ.get("ENVBOX_TEST_KEEP"):
        print(f"kept {path}", file=sys.stderr)
    else:
        shutil.rmtree(path, ignore_errors=True)


def small_tmpfs(test, prefix, size):
    """A temporary folder (named from `prefix`) with a tmpfs of `size` ("4m") mounted on its
    mnt/: returns (folder, mount point); the caller unmounts and removes them. Skips `test`
    where no tmpfs can be mounted (not root, or not allowed here)."""
    if os.geteuid() != 0:
        test.skipTest("mounting a small tmpfs needs root")
    tmp = tempfile.mkdtemp(prefix=prefix)
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt]).returncode != 0:
        shutil.rmtree(tmp)
        test.skipTest("cannot mount tmpfs here")
    return tmp, mnt


# --- projects and manifests ----------------------------------------------------------------

def build_tools_index(root):
    """A PEP 503 simple index under ROOT of the files in ROOT/files, with Debian's setuptools
    and wheel wheels copied beside them (what a setuptools build requires): a page per project,
    each link carrying its sha256. Returns the running StaticServer; the index is at its
    url + "/simple"."""
    from httpserver import StaticServer
    files = os.path.join(root, "files")
    for w in DEBIAN_WHEELS:
        if os.path.basename(w).startswith(("setuptools-", "wheel-")):
            shutil.copy(w, files)
    for fn in sorted(os.listdir(files)):
        page = os.path.join(root, "simple", re.split(r"[-_]", fn)[0].lower())
        os.makedirs(page, exist_ok=True)
        with open(os.path.join(page, "index.html"), "a") as f:
            f.write(f'<a href="../../files/{fn}#sha256={sha256_file(os.path.join(files, fn))}">{fn}</a>\n')
    return StaticServer(root)


def manifest_text(requirements, *, python=PYV, platform="manylinux_2_28_x86_64", cuda=None, indexes=(),
                  sources="", extra=""):
    """A manifest's text: [environment], then one [[index]] per (name, url, extra TOML lines)
    of `indexes`, then [sources] (TOML lines) when given, then `extra` as is."""
    reqs = ", ".join(f'"{r}"' for r in requirements)
    text = f'[environment]\npython = "{python}"\nplatform = "{platform}"\n'
    if cuda:
        text += f'cuda = "{cuda}"\n'
    text += f"requirements = [{reqs}]\n"
    for name, url, lines in indexes:
        text += f'\n[[index]]\nname = "{name}"\nurl = "{url}"\n{lines}'
    if sources:
        text += "\n[sources]\n" + sources
    return text + extra


def write_manifest(root, env, text):
    """Writes root/manifests/ENV.toml (making the folders) and returns root."""
    os.makedirs(os.path.join(root, "manifests"), exist_ok=True)
    with open(os.path.join(root, "manifests", f"{env}.toml"), "w", encoding="utf-8") as f:
        f.write(text)
    return root


def current_generation(home, env):
    """The real path of ENV's current generation in `home` (any project), or None."""
    links = glob.glob(os.path.join(home, "envs", "*", env, "current"))
    return os.path.realpath(links[0]) if links else None


def site_packages(root):
    """The site-packages folder of the environment at `root`."""
    return glob.glob(os.path.join(root, "lib", "python*", "site-packages"))[0]


class Project:
    """A project folder (`root`, default tmp/proj, with manifests/ and wheels/) and the home
    it is created in (`home`, default tmp/home), with envbox run against both."""

    def __init__(self, tmp, *, root=None, home=None):
        self.tmp = tmp
        self.root = root or os.path.join(tmp, "proj")
        self.wheels = os.path.join(self.root, "wheels")
        self.home = home or os.path.join(tmp, "home")
        os.makedirs(os.path.join(self.root, "manifests"), exist_ok=True)

    def lock(self, env, wheels):
        """Writes manifests/pylock.ENV.toml over `wheels` (Wheel objects are built into
        wheels/, paths taken as they are) and returns the wheel paths."""
        paths = [w.build(self.wheels) if isinstance(w, Wheel) else w for w in wheels]
        write_lock(self.lock_path(env), paths)
        return paths

    def write(self, env, text):
        """Writes the manifest manifests/ENV.toml."""
        write_manifest(self.root, env, text)

    def lock_path(self, env):
        return os.path.join(self.root, "manifests", f"pylock.{env}.toml")

    def lock_text(self, env):
        with open(self.lock_path(env)) as f:
            return f.read()

    def run(self, *args, check=True, **kw):
        """envbox(*args) with this project's home and root."""
        return envbox(*args, home=self.home, project=self.root, check=check, **kw)

    def current(self, env):
        return current_generation(self.home, env)

    def site(self, env):
        return site_packages(self.current(env))


class Fixture:
    """A project directory tmp/NAME with manifests/pylock.env.toml over the given wheels
    (Wheel objects are built, paths copied into its wheels/ folder)."""

    def __init__(self, tmp, name, wheels, url_prefix=None, manifest=True):
        self.tmp = tmp
        self.project = os.path.join(tmp, name)
        os.makedirs(os.path.join(self.project, "manifests"), exist_ok=True)
        self.wheel_dir = os.path.join(self.project, "wheels")
        os.makedirs(self.wheel_dir, exist_ok=True)
        self.paths = []
        for w in wheels:
            if isinstance(w, Wheel):
                self.paths.append(w.build(self.wheel_dir))
            else:
                dst = os.path.join(self.wheel_dir, os.path.basename(w))
                shutil.copyfile(w, dst)
                self.paths.append(dst)
        self.lock = os.path.join(self.project, "manifests", "pylock.env.toml")
        write_lock(self.lock, self.paths, url_prefix=url_prefix)


def pip_install(venv, wheel_dir, *requirement_groups):
    """pip from Debian's wheel (PIP_WHEEL) into `venv` (made from PYTHON, without pip, if it is
    not there), one `pip install --no-deps --no-index` from `wheel_dir` per group: a later
    group overwrites what an earlier one installed, as pip does."""
    if not os.path.exists(venv):
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
    for group in requirement_groups:
        subprocess.run([PYTHON, os.path.join(PIP_WHEEL, "pip"), "--python", os.path.join(venv, "bin", "python"),
                        "install", "--no-deps", "--no-index", "--no-compile", "--disable-pip-version-check",
                        "-q", "--find-links", wheel_dir] + list(group), check=True)


# --- trees, digests, wheels -----------------------------------------------------------------

def many_files(name, version, n, big=0):
    """A wheel NAME with `n` small modules in 20 folders (each naming `version`, so two
    versions share no file) and, if `big`, a blob.bin of that many random bytes."""
    files = {f"{name}/sub{i % 20}/m{i}.py": f"V = {i!r}  # {version}\n" for i in range(n)}
    files[f"{name}/__init__.py"] = f"VERSION = {version!r}\n"
    if big:
        files[f"{name}/blob.bin"] = os.urandom(big)
    return Wheel(name, version, files)


def sha256_hex(data):
    """The hex sha256 of bytes (sha256_file, from wheelgen, is that of a file)."""
    return hashlib.sha256(data).hexdigest()


def tree(root):
    """path → (kind, bytes or link target, exec bit) for everything under root."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p), False)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", None, False)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", f.read(), bool(st.st_mode & 0o100))
    return out


def envbox_pip_shim(root):
    """The paths of envbox's pip in the environment at `root` (its launchers and package, see
    env/venv.hpp), or an empty set where the lock's own pip stands instead."""
    init = glob.glob(os.path.join(root, "lib", "python*", "site-packages", "pip", "__init__.py"))
    with open(init[0], "rb") if init else open(os.devnull, "rb") as f:
        if b"envbox's pip for this environment" not in f.read(200):
            return set()
    site = os.path.relpath(os.path.dirname(os.path.dirname(init[0])), root)
    return {rel for rel in tree(root) if rel.startswith(site + "/pip/") or rel == site + "/pip" or
            re.fullmatch(r"bin/pip[0-9.]*", rel)}


def pip_comparable(root):
    """tree(root) as the differential against pip compares it: without the interpreter's own
    files (pyvenv.cfg, bin/python*, activate scripts, lib64, include), envbox's pip, envbox's
    .envbox, __pycache__ and directories (implied by the files; pip leaves some empty ones), and
    with the environment's path in file contents replaced by <ENV>."""
    out = {}
    shim = envbox_pip_shim(root)
    for rel, (kind, data, exe) in tree(root).items():
        if rel.startswith(".envbox") or rel in ("pyvenv.cfg", "lib64", "include") or \
                rel.startswith("bin/python") or rel.startswith("bin/activate") or rel == "bin/Activate.ps1" or \
                rel in shim:
            continue
        if "__pycache__" in rel or kind == "dir":
            continue
        if kind == "file":
            data = data.replace(root.encode(), b"<ENV>")
        out[rel] = (kind, data, exe)
    return out


def store_listing(home):
    """Every file under the home's store, relative to it."""
    root = os.path.join(home, "store-v1")
    out = set()
    for dirpath, _, filenames in os.walk(root):
        for n in filenames:
            out.add(os.path.relpath(os.path.join(dirpath, n), root))
    return out


def metadata_name(wheel):
    """The Name field of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        for line in z.read(meta).decode().splitlines():
            if line.lower().startswith("name:"):
                return line.split(":", 1)[1].strip()
    raise ValueError(wheel)


# --- lock texts -----------------------------------------------------------------------------

def packages(lock_text):
    """name -> (version, index) from a lock's text."""
    out = {}
    for block in lock_text.split("[[packages]]")[1:]:
        name = re.search(r'^name = "([^"]+)"', block, re.M).group(1)
        version = re.search(r'^version = "([^"]+)"', block, re.M).group(1)
        index = re.search(r'^index = "([^"]+)"', block, re.M).group(1)
        out[name] = (version, index.rsplit("/", 1)[1])
    return out


def golden(name, text):
    """The golden file tests/lock/golden/NAME; ENVBOX_ACCEPT_GOLDEN=1 first rewrites it as `text`."""
    path = os.path.join(GOLDEN, name)
    if os.environ.get("ENVBOX_ACCEPT_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        return f.read()
