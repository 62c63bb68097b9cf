"""A PyTorch-shaped package world served as real simple indexes from 127.0.0.1.

Three indexes, like the real ones:
- `pytorch-cu128` and `pytorch-cu130` (HTML only, `%2B` in file URLs, no metadata files):
  torch / torchvision / triton with `+cu128` / `+cu130` local versions, plus *stale* copies of
  generic packages (`typing-extensions 4.2.0`, `requests 2.20.0`) as download.pytorch.org has;
- `pypi` (PEP 691 JSON and PEP 503 HTML with PEP 658 metadata files): the `nvidia-*-cu12` family
  for CUDA 12.8, the `nvidia-*` 13.x family and `cuda-toolkit` for CUDA 13.0, and the generic
  packages (newer than the stale copies), transformers, datasets, sglang…

`Server` serves a directory, answering JSON when a page has `index.json` and the client asks
for `application/vnd.pypi.simple.v1+json`; `manifest` writes a manifest for this world.
"""
import hashlib
import html
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
from envboxtest import manifest_text, sha256_file  # noqa: E402
from httpserver import HttpServer, QuietFiles  # noqa: E402
from wheelgen import Wheel, normalize  # noqa: E402

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TAG = f"{PY}-{PY}-manylinux_2_28_x86_64"


def pkg(name, version, requires=(), tag="py3-none-any", files=None, requires_python=None):
    mod = normalize(name).replace("-", "_")
    w = Wheel(name, version, files or {f"{mod}/__init__.py": f"__version__ = {version!r}\n"}, tag=tag,
              requires=list(requires))
    w.requires_python = requires_python
    return w


def world(py=PY, machines=("x86_64",)):
    """{index name: [Wheel]} for CPython `py` (cp312) and each of `machines`: every binary
    package has one wheel per machine, tagged as its real wheels are."""
    def each(make):
        return [make(m) for m in machines]

    def binary(m):
        return f"{py}-{py}-manylinux_2_28_{m}"

    def cuda(m):
        return f"py3-none-manylinux_2_27_{m}"

    cu12 = (each(lambda m: pkg("nvidia-cublas-cu12", "12.8.4.1", tag=cuda(m))) +
            each(lambda m: pkg("nvidia-cublas-cu12", "12.9.1.4", tag=cuda(m))) +
            each(lambda m: pkg("nvidia-cudnn-cu12", "9.10.2.21", ["nvidia-cublas-cu12"], tag=cuda(m))) +
            each(lambda m: pkg("nvidia-nccl-cu12", "2.27.3", tag=f"py3-none-manylinux_2_18_{m}")))
    cu13 = (each(lambda m: pkg("nvidia-cublas", "13.0.0.19", tag=cuda(m))) +
            each(lambda m: pkg("nvidia-cudnn-cu13", "9.13.0.50", ["nvidia-cublas"], tag=cuda(m))) +
            each(lambda m: pkg("nvidia-nccl-cu13", "2.28.3", tag=f"py3-none-manylinux_2_18_{m}")) +
            [pkg("cuda-toolkit", "13.0.1", ["nvidia-cublas==13.0.0.19"])])
    generic = [pkg("typing-extensions", "4.12.2"), pkg("typing-extensions", "4.15.0"),
               pkg("requests", "2.32.5", ["urllib3>=1.21.1,<3", "idna>=2.5,<4", "certifi>=2017.4.17"]),
               pkg("urllib3", "2.5.0"), pkg("idna", "3.10"), pkg("certifi", "2025.8.3"),
               pkg("filelock", "3.19.1"), pkg("sympy", "1.14.0", ["mpmath>=1.1.0,<1.4"]), pkg("mpmath", "1.3.0")]
    generic += (each(lambda m: pkg("numpy", "2.3.3", tag=binary(m))) +
                each(lambda m: pkg("numpy", "2.3.4rc1", tag=binary(m))) +
                each(lambda m: pkg("safetensors", "0.6.2", tag=binary(m))))
    generic += [pkg("huggingface-hub", "0.35.0", ["filelock", "requests", "typing-extensions>=3.7.4.3"]),
                pkg("transformers", "4.56.2", ["huggingface-hub>=0.34.0,<1.0", "numpy>=1.17", "safetensors>=0.4.3",
                                               "requests", "filelock"]),
                pkg("transformers", "4.57.0", ["huggingface-hub>=0.34.0,<1.0", "numpy>=1.17", "safetensors>=0.4.3",
                                               "requests", "filelock"]),
                pkg("datasets", "4.1.1", ["numpy>=1.17", "requests>=2.32.2", "filelock", "huggingface-hub>=0.24"]),
                pkg("wandb", "0.22.0", ["requests>=2.0.0,<3", "typing-extensions>=4.8,<5"]),
                pkg("sglang", "0.5.3", ["torch==2.11.0", "transformers>=4.56", "requests", "numpy"])]
    # A torch on PyPI too: without the source pin it would win for an unpinned lock.
    generic += each(lambda m: pkg("torch", "2.11.0", ["typing-extensions>=4.10.0", "filelock", "sympy>=1.13.3"],
                                  tag=binary(m)))

    def torch_family(line, cuda_deps):
        base = ["typing-extensions>=4.10.0", "filelock", "sympy>=1.13.3"]
        return (each(lambda m: pkg("torch", f"2.11.0+{line}",
                                   base + ["triton==3.5.0; platform_system == 'Linux'"] + cuda_deps, tag=binary(m))) +
                each(lambda m: pkg("torch", f"2.10.0+{line}", base + cuda_deps, tag=binary(m))) +
                each(lambda m: pkg("torchvision", f"0.26.0+{line}", ["torch==2.11.0", "numpy"], tag=binary(m))) +
                each(lambda m: pkg("triton", "3.5.0", tag=binary(m))) +
                # stale generic copies, as the real PyTorch indexes carry
                [pkg("typing-extensions", "4.2.0"), pkg("requests", "2.20.0", ["urllib3"]),
                 pkg("filelock", "3.13.1")])

    return {
        "pytorch-cu128": torch_family("cu128", ["nvidia-cublas-cu12==12.8.4.1", "nvidia-cudnn-cu12==9.10.2.21",
                                                "nvidia-nccl-cu12==2.27.3"]),
        "pytorch-cu130": torch_family("cu130", ["nvidia-cublas==13.0.0.19", "nvidia-cudnn-cu13==9.13.0.50",
                                                "nvidia-nccl-cu13==2.28.3", "cuda-toolkit==13.0.1"]),
        "pypi": cu12 + cu13 + generic,
    }


def synthetic(n, seed=1):
    """n generic packages for PyPI forming a DAG (each depends on up to 3 earlier ones, two
    versions each), and the names of the roots a manifest should require."""
    import random
    rng = random.Random(seed)
    wheels, names = [], []
    for i in range(n):
        name = f"lib{i:03d}"
        deps = [f"{names[j]}>=1.0" for j in rng.sample(range(len(names)), min(len(names), rng.randint(0, 3)))]
        for version in ("1.0", "1.1"):
            wheels.append(pkg(name, version, deps))
        names.append(name)
    return wheels, names[-60:]


def build(root, html_only=("pytorch-cu128", "pytorch-cu130"), extra_pypi=()):
    """Writes every index under root/<index>/; `extra_pypi` adds wheels to the PyPI index."""
    w = world()
    w["pypi"] = w["pypi"] + list(extra_pypi)
    write_indexes(root, w, html_only)


def write_indexes(root, indexes, html_only=()):
    """Writes the simple pages of `indexes` ({index name: [Wheel]}) under root/<index>/ and
    their files under root/files/<index>/; `html_only` indexes get no JSON and no metadata
    files, as the PyTorch indexes have none."""
    files_dir = os.path.join(root, "files")
    for index, wheels in indexes.items():
        by_project = {}
        for w in wheels:
            path = w.build(os.path.join(files_dir, index))
            by_project.setdefault(normalize(w.name), []).append((w, path))
        for project, entries in by_project.items():
            page_dir = os.path.join(root, index, project)
            os.makedirs(page_dir, exist_ok=True)
            anchors, jfiles = [], []
            for w, path in sorted(entries, key=lambda e: e[1]):
                fn = os.path.basename(path)
                url = f"/files/{index}/{fn}".replace("+", "%2B")
                digest = sha256_file(path)
                attrs = ""
                rp = getattr(w, "requires_python", None)
                if rp:
                    attrs += f' data-requires-python="{html.escape(rp)}"'
                meta = None
                if index not in html_only:
                    import zipfile
                    with zipfile.ZipFile(path) as z:
                        meta = z.read(f"{w.dist_info}/METADATA")
                    with open(path + ".metadata", "wb") as f:
                        f.write(meta)
                    attrs += f' data-core-metadata="sha256={hashlib.sha256(meta).hexdigest()}"'
                anchors.append(f'<a href="{url}#sha256={digest}"{attrs}>{fn}</a><br/>')
                jf = {"filename": fn, "url": url, "hashes": {"sha256": digest}, "size": os.path.getsize(path)}
                if rp:
                    jf["requires-python"] = rp
                if getattr(w, "upload_time", None):  # PEP 700, JSON pages only
                    jf["upload-time"] = w.upload_time
                if meta is not None:
                    jf["core-metadata"] = {"sha256": hashlib.sha256(meta).hexdigest()}
                jfiles.append(jf)
            with open(os.path.join(page_dir, "index.html"), "w") as f:
                f.write("<!DOCTYPE html>\n<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")
            if index not in html_only:
                with open(os.path.join(page_dir, "index.json"), "w") as f:
                    json.dump({"meta": {"api-version": "1.1"}, "name": project, "files": jfiles}, f)


def manifest(url, line, requirements, extra_sources=""):
    """A manifest for this world served at `url`: the CUDA `line` (cu128, cu130) with its
    PyTorch index explicit and torch, torchvision and triton sourced from it, then PyPI;
    `extra_sources` adds [sources] lines."""
    cuda = {"cu128": "12.8", "cu130": "13.0"}[line]
    return manifest_text(requirements, cuda=cuda,
                         indexes=[(f"pytorch-{line}", f"{url}/pytorch-{line}", "explicit = true\n"),
                                  ("pypi", f"{url}/pypi", "")],
                         sources=f'torch = "pytorch-{line}"\ntorchvision = "pytorch-{line}"\n'
                                 f'triton = "pytorch-{line}"\n{extra_sources}')


class Server(HttpServer):
    """A real HTTP server on 127.0.0.1 serving `directory` as simple indexes; `requests`
    counts the GETs."""

    def __init__(self, directory):
        self.requests = 0

        outer = self

        class Handler(QuietFiles):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=directory, **k)

            def do_GET(self):
                outer.requests += 1
                path = self.translate_path(self.path)
                accept = self.headers.get("Accept", "")
                if os.path.isdir(path) and "application/vnd.pypi.simple.v1+json" in accept and \
                        os.path.exists(os.path.join(path, "index.json")):
                    with open(os.path.join(path, "index.json"), "rb") as f:
                        body = f.read()
                    etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                    if self.headers.get("If-None-Match") == etag:
                        self.send_response(304)
                        self.send_header("ETag", etag)
                        self.end_headers()
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                    self.send_header("Content-Length", str(len(body)))
                    self.send_header("ETag", etag)
                    self.end_headers()
                    self.wfile.write(body)
                    return
                return super().do_GET()

        super().__init__(Handler)
