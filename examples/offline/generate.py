#!/usr/bin/env python3
"""Generate the offline example's wheels and locks (no network needed).

Two environments over one local wheel directory, the way a training and an inference stack
share a machine:

- `train`: the real wheels Debian ships in /usr/share/python-wheels (pip, setuptools, wheel)
  plus `hello-envbox 1.0` and `fakecuda-cu12 12.8.0` (a stand-in for the nvidia-*-cu12 wheels);
- `infer`: `wheel`, `hello-envbox 2.0` and `fakecuda-cu13 13.0.0`.

It also writes `envbox.toml`, the project file, naming the wheel directory as a `file://`
find-links index shared by every manifest, so the demo can `init`, `add`, `tree`, `why` and
`remove` a third environment with nothing but loopback-free local files (`hello-envbox 2.0`
requires `fakecuda-cu13`, as a real package requires its CUDA libraries).

Both locks are PEP 751 files with `path` entries relative to the lock and the sha256 of every
wheel. The wheels are built here because their hashes depend on the bytes Debian ships.
"""
import glob
import os
import pathlib
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from wheelgen import Wheel, write_lock  # noqa: E402


def hello(version, requires):
    return Wheel("hello-envbox", version, {
        "hello_envbox/__init__.py": (
            "import sys, importlib.metadata as m\n"
            "def main():\n"
            f"    cuda = [d.metadata['Name'] for d in m.distributions() if 'cuda' in d.metadata['Name']]\n"
            f"    print(f'hello from envbox {version} on Python {{sys.version.split()[0]}} in {{sys.prefix}}; CUDA wheels: {{cuda}}')\n"
        ),
    }, entry_points={"console_scripts": {"hello-envbox": "hello_envbox:main"}}, requires=requires)


def fakecuda(line, version):
    # The same header in both lines (stored once), a library that differs.
    return Wheel(f"fakecuda-{line}", version, {
        f"fakecuda/{line}/include/common.h": "/* shared across CUDA lines */\n",
        f"fakecuda/{line}/lib/libfakecuda.so": f"ELF {line} {version}\n" * 64,
    })


def main():
    wheels = os.path.join(HERE, "wheels")
    shutil.rmtree(wheels, ignore_errors=True)
    os.makedirs(wheels)
    debian = sorted(glob.glob("/usr/share/python-wheels/*.whl"))
    if not debian:
        sys.exit("generate.py: no wheels in /usr/share/python-wheels "
                 "(apt-get install python3-pip-whl python3-setuptools-whl python3-wheel-whl)")
    copied = {os.path.basename(w).split("-")[0]: shutil.copy(w, wheels) for w in debian}
    train = list(copied.values()) + [hello("1.0", ["fakecuda-cu12"]).build(wheels), fakecuda("cu12", "12.8.0").build(wheels)]
    infer = [copied["wheel"], hello("2.0", ["fakecuda-cu13"]).build(wheels), fakecuda("cu13", "13.0.0").build(wheels)]
    manifests = os.path.join(HERE, "manifests")
    write_lock(os.path.join(manifests, "pylock.train.toml"), train)
    write_lock(os.path.join(manifests, "pylock.infer.toml"), infer)
    with open(os.path.join(HERE, "envbox.toml"), "w") as f:
        f.write("# Written by generate.py: what the example's environments share.\n"
                "[[index]]\n"
                'name = "local"  # the wheels beside this file, as a find-links directory\n'
                f'url = "{pathlib.Path(wheels).as_uri()}"\n')
    print(f"wrote {len(train)} + {len(infer)} wheels to {wheels}, their locks to {manifests}, "
          "and envbox.toml")


if __name__ == "__main__":
    main()
