# envbox's PEP 517 frontend: runs one hook of a source tree's build backend, inside the build
# sandbox (install/build.cpp starts it as `python -I -c CODE ...`, in the tree's folder, with
# no network and a private TMPDIR). Python 3.8+, the standard library only. Its arguments:
#   HOOK BACKEND BACKEND_PATH OUT RESULT [BUILD_PATH ...]
# HOOK is build_wheel or build_editable (PEP 660); BACKEND is `module[:object]`; BACKEND_PATH the tree's in-tree backend
# folders, joined by NUL ("" for none); OUT the folder the wheel goes into; RESULT the file the
# hook's answer (the wheel's file name) is written to; each BUILD_PATH an import root of the
# build requirements, put first on sys.path. What the backend prints goes to the build log.
import importlib
import os
import sys


def load_backend(spec, backend_path):
    # In-tree backends first (PEP 517: `backend-path`, relative to the tree), then the build
    # requirements, then the interpreter's own library; never the user's site-packages (-I).
    module_name, _, attrs = spec.partition(":")
    backend = importlib.import_module(module_name)
    for attr in filter(None, attrs.split(".")):
        backend = getattr(backend, attr)
    if backend_path:
        origin = os.path.realpath(getattr(sys.modules[module_name], "__file__", "") or "")
        tree = [os.path.realpath(p) for p in backend_path]
        if not any(origin.startswith(p + os.sep) for p in tree):
            raise SystemExit("envbox: the backend %s was not loaded from backend-path %s"
                             % (spec, backend_path))
    return backend


def main(argv):
    hook, spec, backend_path, out, result = argv[:5]
    backend_path = [os.path.abspath(p) for p in backend_path.split("\0") if p]
    sys.path[:0] = backend_path + argv[5:]
    backend = load_backend(spec, backend_path)
    if hook not in ("build_wheel", "build_editable"):
        raise SystemExit("envbox: unknown hook " + hook)
    if not hasattr(backend, hook):
        raise SystemExit("envbox: the backend %s has no %s hook (PEP 660): this project cannot "
                         "be installed editable; give editable = false" % (spec, hook))
    name = getattr(backend, hook)(out, config_settings=None)
    with open(result, "w", encoding="utf-8") as f:
        f.write(name)


main(sys.argv[1:])
