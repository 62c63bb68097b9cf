"""The generated wheel set of the install tests: one wheel per quirk the wheel spec, the
corpus (wheel_install.json) and STANDARDS.md ask an installer to handle."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from wheelgen import Wheel  # noqa: E402


def quirk_wheels():
    import platform
    py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    ws = []
    # .data scripts: #!python (LF), #!pythonw with args, #!python CRLF, #!/usr/bin/env (kept),
    # a shell script; headers; data; purelib/platlib; console + gui entry points; a setuptools
    # wrapper for an entry point (skipped, as pip does); CRLF RECORD; dotted uppercase name.
    d = "Quirk.Dotted_Name-1.0.data"
    ws.append(Wheel("Quirk.Dotted_Name", "1.0", {
        "quirk_dotted/__init__.py": "VALUE = 'quirk'\ndef main():\n    print('quirk-cli ran')\n    return 0\n"
                                   "def gui():\n    return 0\n",
        "quirk_dotted/tool.sh": "#!/bin/sh\necho tool\n",
        f"{d}/scripts/quirk-plain": "#!python\nimport quirk_dotted\nprint(quirk_dotted.VALUE)\n",
        f"{d}/scripts/quirk-argsw": "#!pythonw -E\nprint('w')\n",
        f"{d}/scripts/quirk-crlf": "#!python\r\nprint('crlf')\r\n",
        f"{d}/scripts/quirk-env.py": "#!/usr/bin/env python\r\nprint('env')\r\n",
        f"{d}/scripts/quirk-shell": "#!/bin/sh\necho shell\n",
        f"{d}/scripts/quirk-cli-script.py": "# setuptools wrapper, skipped\n",
        f"{d}/headers/quirk.h": "#define QUIRK 1\n",
        f"{d}/data/share/quirk/data.txt": "data file\n",
        f"{d}/purelib/quirk_pure_extra.py": "X = 1\n",
        f"{d}/platlib/quirk_plat_extra.py": "Y = 2\n",
    }, entry_points={
        "console_scripts": {"quirk-cli": "quirk_dotted:main", "QuirkUpper": "quirk_dotted:main"},
        "gui_scripts": {"quirk-gui": "quirk_dotted:gui"},
        "other.group": {"ignored": "quirk_dotted:main"},
    }, executables={"quirk_dotted/tool.sh"} | {
        f"{d}/scripts/{n}" for n in ("quirk-plain", "quirk-argsw", "quirk-crlf", "quirk-env.py")}, crlf_record=True))
    # Non-ASCII module paths and a Unicode console script; explicit directory entries.
    ws.append(Wheel("unicode-names", "2.0", {
        "unicode_names/__init__.py": "def main():\n    print('unicode')\n",
        "வணக்கம்/__init__.py": "",
        "வணக்கம்/નમસ્તે.py": "GREETING = 'hello'\n",
    }, entry_points={"console_scripts": {"進入點": "unicode_names:main"}}, explicit_dirs=True))
    # Two wheels sharing a namespace directory (the nvidia/cu13/lib case).
    ws.append(Wheel("nvshare-a", "13.0.1", {"nvshare/cu13/lib/liba.so.1": b"\x7fELF-a",
                                             "nvshare/cu13/include/a.h": "int a;\n"}))
    ws.append(Wheel("nvshare-b", "13.0.2", {"nvshare/cu13/lib/libb.so.1": b"\x7fELF-b",
                                             "nvshare/cu13/include/b.h": "int b;\n"}))
    # Root-Is-Purelib: false (platlib root), a platform tag, an empty file, a quoted RECORD path.
    ws.append(Wheel("platpkg", "0.3", {
        "platpkg/__init__.py": "",
        f"platpkg/_ext.cpython-{py[2:]}-x86_64-linux-gnu.so": b"\x7fELF\x02\x01\x01",
        "platpkg/with,comma.txt": "comma\n",
        "platpkg/py.typed": "",
    }, tag=f"{py}-{py}-manylinux_2_17_{platform.machine()}", purelib=False))
    return ws
