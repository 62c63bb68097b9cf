#!/usr/bin/env python3
"""Source builds, cold and from the store: a lock of N setuptools sdists (50 modules each) with
one build environment (Debian's setuptools and wheel wheels), created as ENV e (every sdist
built, the build environment made) and then as ENV f from the same lock (every wheel the
store's: nothing built).

    bench/sdist_builds.py ENVBOX_BINARY [N]     (Debian's /usr/bin/python3; no network)
"""
import glob
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    envbox, n = os.path.abspath(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tmp = tempfile.mkdtemp(prefix="envbox-sdist-bench-")
    manifests = os.path.join(tmp, "proj", "manifests")
    os.makedirs(os.path.join(manifests, "sdists"))
    build = 'lock-version = "1.0"\ncreated-by = "bench"\n\n'
    for w in sorted(glob.glob("/usr/share/python-wheels/setuptools-*.whl") +
                    glob.glob("/usr/share/python-wheels/wheel-*.whl")):
        name, version = os.path.basename(w).split("-")[:2]
        build += (f'[[packages]]\nname = "{name}"\nversion = "{version}"\n\n[[packages.wheels]]\n'
                  f'path = "{w}"\nhashes = {{ sha256 = "{sha(w)}" }}\n\n')
    with open(os.path.join(manifests, "pylock.e.build.toml"), "w") as f:
        f.write(build)
    build_sha = sha(os.path.join(manifests, "pylock.e.build.toml"))
    lock, builds = 'lock-version = "1.0"\ncreated-by = "bench"\n\n', []
    for i in range(n):
        name = f"pkg{i}"
        path = os.path.join(manifests, "sdists", f"{name}-1.0.tar.gz")
        files = {"setup.py": f"from setuptools import setup\nsetup(name='{name}', version='1.0', packages=['{name}'])\n",
                 f"{name}/__init__.py": "X = 1\n"}
        files.update({f"{name}/m{j}.py": f"V = {j}\n" for j in range(50)})
        with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as t:
            for fn, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(f"{name}-1.0/{fn}")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        lock += (f'[[packages]]\nname = "{name}"\nversion = "1.0"\n\n[packages.sdist]\n'
                 f'path = "sdists/{name}-1.0.tar.gz"\nhashes = {{ sha256 = "{sha(path)}" }}\n\n')
        builds.append(f'"{name} pylock.e.build.toml {build_sha}"')
    lock += "[tool.envbox]\nbuilds = [" + ", ".join(builds) + "]\n"
    for env in ("e", "f"):
        with open(os.path.join(manifests, f"pylock.{env}.toml"), "w") as f:
            f.write(lock)
    cmd = [envbox, "--home", os.path.join(tmp, "home"), "--project", os.path.join(tmp, "proj"), "create"]
    run_env = dict(os.environ, ENVBOX_PYTHON="/usr/bin/python3")
    for env, what in (("e", f"cold: {n} sdists built, the build environment made"),
                      ("f", "the same lock again: every wheel from the store")):
        start = time.monotonic()
        subprocess.run(cmd + [env], check=True, env=run_env, capture_output=True)
        print(f"create {env} ({what}): {time.monotonic() - start:.2f} s")
    subprocess.run(["chmod", "-R", "u+w", tmp], check=True)  # generations are read-only
    subprocess.run(["rm", "-rf", tmp], check=True)


if __name__ == "__main__":
    main()
