"""envbox's pip for this environment: not pip, and not a distribution (written by envbox).

The environment is built by envbox from its lock and changes only through envbox. This package
answers pip's read-only commands (list, freeze, show, check) for exactly the distributions in
the environment's own site-packages, printed as pip 23 prints them, and refuses every command
that would change the environment, naming the envbox command that does it. Markers and version
specifiers are evaluated with `packaging` when the environment has it; without it, `check` only
checks that requirements are present, and says so. `envbox verify` reports any change here.
"""
import csv
import json
import os
import pathlib
import re
import shlex
import sys
from importlib import metadata

# @ENVBOX-GENERATED@

__all__ = ["main"]

USAGE = """\
Usage: pip <command> [options]

This is envbox's pip for the environment %(env)s, which envbox builds from its lock: it reads
the environment and changes nothing.

Commands:
  list      List the environment's distributions (--format columns|freeze|json, -v).
  freeze    Print them in requirements format (--all, --exclude NAME).
  show      Show information about distributions (-f/--files, -v).
  check     Verify that their requirements are installed and have compatible versions.
  help      Show this help.

The environment changes through envbox, outside it:
  envbox add %(env)s PACKAGE...      (for pip install)
  envbox remove %(env)s PACKAGE...   (for pip uninstall)
  envbox lock %(env)s --upgrade      (newer versions)
"""

# Options every pip command takes that do not matter to a read-only answer: flags, and those
# taking a value (-v is counted).
_GLOBAL_FLAGS = {"-v", "--verbose", "-q", "--quiet", "--no-color", "--disable-pip-version-check",
                 "--isolated", "--no-input", "--no-python-version-warning",
                 "--require-virtualenv", "--no-cache-dir", "--debug"}
_GLOBAL_VALUES = {"--log", "--log-file", "--local-log", "--cache-dir", "--timeout", "--retries",
                  "--proxy", "--exists-action", "--cert", "--client-cert", "--trusted-host",
                  "--use-feature", "--use-deprecated", "--keyring-provider"}
_HELP = {"-h", "--help"}
_VERSION = {"-V", "--version"}
_STDLIB_PKGS = {"python", "wsgiref", "argparse"}  # what pip never lists
_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


class _Refused(Exception):
    """A command this pip does not run: the message, and the exit status."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class _Unknown(Exception):
    """An option this pip does not take."""


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _quote(args):
    return " ".join(shlex.quote(a) for a in args)


def _parse(args, flags, values):
    """Splits `args` into (options, positionals): options is a list of (option, value or None)
    in order; `--opt=value`, `-ovalue` and combined short flags (`-vv`) are read as pip reads
    them. An option outside `flags`, `values` and the global ones raises _Unknown."""
    flags = flags | _GLOBAL_FLAGS | _HELP | _VERSION
    values = values | _GLOBAL_VALUES
    options, positionals = [], []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            positionals += args[i:]
            break
        if not a.startswith("-") or a == "-":
            positionals.append(a)
            continue
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            matches = [o for o in flags | values if o.startswith(name) and o.startswith("--")]
            if name not in flags | values and len(matches) == 1:
                name = matches[0]  # optparse takes an unambiguous prefix
            if name in values:
                if not eq:
                    if i >= len(args):
                        raise _Refused("%s option requires an argument" % name, 2)
                    value = args[i]
                    i += 1
                options.append((name, value))
            elif name in flags and not eq:
                options.append((name, None))
            else:
                raise _Unknown(a)
            continue
        k = 1
        while k < len(a):
            name = "-" + a[k]
            k += 1
            if name in values:
                value = a[k:]
                if not value:
                    if i >= len(args):
                        raise _Refused("%s option requires an argument" % name, 2)
                    value = args[i]
                    i += 1
                options.append((name, value))
                break
            if name not in flags:
                raise _Unknown(name)
            options.append((name, None))
    return options, positionals


def _site_dirs():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    for rel in SITE_DIRS:
        d = os.path.normpath(os.path.join(here, rel))
        if d not in out:
            out.append(d)
    return out


def _load_packaging():
    """packaging's Requirement and Version, when the environment has packaging; else None."""
    try:
        from packaging.requirements import Requirement
        from packaging.version import InvalidVersion, Version
    except Exception:
        return None
    return Requirement, Version, InvalidVersion


class _Dist:
    """One distribution of the environment, read as pip reads it (importlib.metadata)."""

    def __init__(self, dist, name, packaging):
        self.dist = dist
        self.meta = dist.metadata
        self.name = name
        self.key = _canonical(name)
        self.location = str(dist.locate_file(""))
        self.version = self.meta.get("Version") or ""
        self.legacy = False  # not PEP 440: pip freeze writes name===version
        if packaging:
            try:
                self.version = packaging[1](self.version)
            except packaging[2]:
                self.legacy = True

    def text(self, name):
        try:
            return self.dist.read_text(name)
        except (OSError, UnicodeDecodeError):
            return None

    def installer(self):
        for line in (self.text("INSTALLER") or "").splitlines():
            if line.strip():
                return line.strip()
        return ""

    def applying(self, packaging):
        """requirements(), or none for a distribution whose requirements do not parse (only
        check reports that)."""
        try:
            return self.requirements(packaging)
        except ValueError:
            return [], 0

    def requirements(self, packaging):
        """(name, Requirement) for each Requires-Dist that applies with no extra, as pip's
        iter_dependencies yields them, and how many were skipped because, without packaging,
        their marker cannot be evaluated (Requirement is then None). ValueError for one
        packaging cannot parse."""
        out, skipped = [], 0
        for text in self.meta.get_all("Requires-Dist") or []:
            if packaging:
                req = packaging[0](text)
                if req.marker is None or req.marker.evaluate({"extra": ""}):
                    out.append((req.name, req))
                continue
            m = _NAME.match(text)
            if not m:
                raise ValueError("invalid requirement: %r" % text)
            if ";" in text[m.end():]:
                skipped += 1
            else:
                out.append((m.group(1), None))
        return out, skipped

    def frozen(self):
        """The line pip freeze prints: `name @ url#hash` from a PEP 610 direct_url.json, else
        `name==version` (`===` for a version that is not PEP 440)."""
        try:
            info = json.loads(self.text("direct_url.json") or "null")
        except ValueError:
            info = None
        if isinstance(info, dict) and isinstance(info.get("url"), str):
            line, fragments = self.name + " @ ", []
            vcs, archive = info.get("vcs_info"), info.get("archive_info")
            if isinstance(vcs, dict):
                line += "%s+%s@%s" % (vcs.get("vcs"), info["url"], vcs.get("commit_id"))
            else:
                line += info["url"]
                if isinstance(archive, dict) and archive.get("hash"):
                    fragments.append(archive["hash"])
            if info.get("subdirectory"):
                fragments.append("subdirectory=" + info["subdirectory"])
            return line + ("#" + "&".join(fragments) if fragments else "")
        return "%s%s%s" % (self.name, "===" if self.legacy else "==", self.version)

    def files(self):
        """RECORD's paths, sorted, as pip show -f prints them; None without a RECORD."""
        text = self.text("RECORD")
        if text is None:
            return None
        return sorted(str(pathlib.PurePosixPath(row[0])) for row in csv.reader(text.splitlines())
                      if row)


def _distributions(packaging):
    """canonical name → _Dist for every distribution in the environment's own site-packages
    (never sys.path: the base interpreter's, the working directory's and PYTHONPATH's are not
    the environment's); the first of two with one name wins, as on sys.path."""
    out = {}
    for dist in metadata.distributions(path=_site_dirs()):
        name = dist.metadata.get("Name")
        if name and _canonical(name) not in out:
            out[_canonical(name)] = _Dist(dist, name, packaging)
    return out


def _verbosity(options):
    return sum(1 for o, _ in options if o in ("-v", "--verbose"))


# What a wheel's METADATA says reaches a terminal: control characters (an escape sequence, a
# carriage return that rewrites the line) are shown escaped, \x1b, never sent raw.
_CONTROLS = {c: "\\x%02x" % c for c in list(range(0x20)) + list(range(0x7f, 0xa0)) if c != 0x09}


def _write(line=""):
    sys.stdout.write(line.translate(_CONTROLS) + "\n")


def _no_packaging_note(what):
    sys.stderr.write("WARNING: packaging is not installed in %s, so %s\n" % (ENV, what))


def _list(args):
    options, positionals = _parse(
        args, {"-l", "--local", "--user", "--not-required", "--exclude-editable",
               "--include-editable", "-e", "--editable", "--pre", "-o", "--outdated", "-u",
               "--uptodate"},
        {"--format", "--exclude", "--path", "-i", "--index-url", "--extra-index-url", "-f",
         "--find-links"})
    given, verbose = {o for o, _ in options}, _verbosity(options)
    if positionals:
        raise _Refused("pip list takes no arguments (got %s)" % _quote(positionals), 2)
    if given & {"-o", "--outdated", "-u", "--uptodate", "-i", "--index-url", "--extra-index-url",
                "-f", "--find-links"}:
        raise _Refused(
            "pip list --outdated/--uptodate needs an index, which envbox's pip does not read: "
            "`envbox lock %s --upgrade` relocks %s to the newest versions and prints what "
            "changes" % (ENV, ENV))
    if "--path" in given:
        raise _Refused("envbox's pip lists only the environment %s; --path is not taken" % ENV, 2)
    fmt = "columns"
    excluded = set(_STDLIB_PKGS)
    for o, v in options:
        if o == "--format":
            if v not in ("columns", "freeze", "json"):
                raise _Refused("option --format: invalid choice: %r (choose from 'columns', "
                               "'freeze', 'json')" % v, 2)
            fmt = v
        elif o == "--exclude":
            excluded.add(_canonical(v))
    packaging = _load_packaging()
    dists = _distributions(packaging)
    shown = [d for k, d in sorted(dists.items()) if k not in excluded]
    if given & {"--user", "-e", "--editable"}:
        shown = []  # a venv without system site-packages has no user site; envbox, no editables
    if "--not-required" in given:
        required, skipped = set(), 0
        for d in dists.values():
            reqs, n = d.applying(packaging)
            required |= {_canonical(name) for name, _ in reqs}
            skipped += n
        if skipped:
            _no_packaging_note("requirements with markers count as not required")
        shown = [d for d in shown if d.key not in required]
    if fmt == "json":
        rows = []
        for d in shown:
            row = {"name": d.name, "version": str(d.version)}
            if verbose:
                row["location"], row["installer"] = d.location, d.installer()
            rows.append(row)
        _write(json.dumps(rows))
    elif fmt == "freeze":
        for d in shown:
            _write("%s==%s%s" % (d.name, d.version, " (%s)" % d.location if verbose else ""))
    elif shown:
        header = ["Package", "Version"] + (["Location", "Installer"] if verbose else [])
        rows = [header] + [[d.name, str(d.version)] +
                           ([d.location, d.installer()] if verbose else []) for d in shown]
        sizes = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = [" ".join(c.ljust(s) for c, s in zip(r, sizes)).rstrip() for r in rows]
        lines.insert(1, " ".join("-" * s for s in sizes))
        for line in lines:
            _write(line)
    return 0


def _freeze(args):
    options, positionals = _parse(
        args, {"--all", "-l", "--local", "--user", "--exclude-editable"},
        {"--exclude", "-r", "--requirement", "--path", "-f", "--find-links"})
    given = {o for o, _ in options}
    if positionals:
        raise _Refused("pip freeze takes no arguments (got %s)" % _quote(positionals), 2)
    if given & {"-r", "--requirement"}:
        raise _Refused("envbox's pip does not freeze against a requirements file: `envbox "
                       "export %s` writes the environment's lock as one" % ENV, 2)
    if "--path" in given:
        raise _Refused("envbox's pip lists only the environment %s; --path is not taken" % ENV, 2)
    skip = set(_STDLIB_PKGS)
    if "--all" not in given:
        skip |= {"pip"} | ({"setuptools", "distribute", "wheel"} if sys.version_info < (3, 12)
                           else set())
    skip |= {_canonical(v) for o, v in options if o == "--exclude"}
    if "--user" in given:
        return 0
    dists = _distributions(_load_packaging())
    for d in sorted(dists.values(), key=lambda d: d.name.lower()):
        if d.key not in skip:
            _write(d.frozen())
    return 0


def _show(args):
    options, names = _parse(args, {"-f", "--files"}, set())
    verbose = _verbosity(options)
    list_files = any(o in ("-f", "--files") for o, _ in options)
    if not names:
        sys.stderr.write("WARNING: ERROR: Please provide a package name or names.\n")
        return 1
    packaging = _load_packaging()
    dists = _distributions(packaging)
    missing = sorted(n for n in names if _canonical(n) not in dists)
    if missing:
        sys.stderr.write("WARNING: Package(s) not found: %s\n" % ", ".join(missing))
    requirements, skipped = {}, 0
    for key, d in dists.items():
        reqs, n = d.applying(packaging)
        requirements[key] = reqs
        skipped += n
    printed = 0
    for name in names:
        d = dists.get(_canonical(name))
        if d is None:
            continue
        if printed:
            _write("---")
        printed += 1
        meta = d.meta
        requires = sorted((n for n, _ in requirements[d.key]), key=str.lower)
        required_by = sorted((o.meta.get("Name") or "UNKNOWN" for k, o in dists.items()
                              if d.key in {_canonical(n) for n, _ in requirements[k]}),
                             key=str.lower)
        for field, value in (("Name", d.name), ("Version", d.version),
                             ("Summary", meta.get("Summary", "")),
                             ("Home-page", meta.get("Home-page", "")),
                             ("Author", meta.get("Author", "")),
                             ("Author-email", meta.get("Author-email", "")),
                             ("License", meta.get("License", "")), ("Location", d.location),
                             ("Requires", ", ".join(requires)),
                             ("Required-by", ", ".join(required_by))):
            _write("%s: %s" % (field, value))
        if verbose:
            _write("Metadata-Version: %s" % (meta.get("Metadata-Version") or ""))
            _write("Installer: %s" % d.installer())
            for field, values in (
                    ("Classifiers", meta.get_all("Classifier") or []),
                    ("Entry-points", [e.strip() for e in (d.text("entry_points.txt") or "")
                                      .splitlines()]),
                    ("Project-URLs", meta.get_all("Project-URL") or [])):
                _write(field + ":")
                for v in values:
                    _write("  " + v)
        if list_files:
            _write("Files:")
            files = d.files()
            if files is None:
                _write("Cannot locate RECORD or installed-files.txt")
            for f in files or []:
                _write("  " + f.strip())
    if skipped:
        _no_packaging_note("Requires and Required-by leave out requirements with markers")
    return 0 if printed else 1


def _check(args):
    options, positionals = _parse(args, set(), set())
    if positionals:
        raise _Refused("pip check takes no arguments (got %s)" % _quote(positionals), 2)
    packaging = _load_packaging()
    dists = _distributions(packaging)
    missing, conflicting, problems, skipped = [], [], False, 0
    for key, d in sorted(dists.items()):
        try:
            reqs, n = d.requirements(packaging)
        except ValueError as e:
            sys.stderr.write("WARNING: Error parsing requirements for %s: %s\n" % (key, e))
            problems = True
            continue
        skipped += n
        for name, req in sorted(reqs, key=lambda r: str((_canonical(r[0]), r[1]))):
            dep = dists.get(_canonical(name))
            if dep is None:
                missing.append("%s %s requires %s, which is not installed." %
                               (key, d.version, _canonical(name)))
            elif req is not None and not _satisfies(req, dep.version):
                conflicting.append("%s %s has requirement %s, but you have %s %s." %
                                   (key, d.version, req, dep.key, dep.version))
    for line in missing + conflicting:
        _write(line)
    if not packaging:
        _no_packaging_note(
            "pip check (envbox) checked only that each requirement without a marker is "
            "installed: versions and markers were not checked")
    if missing or conflicting or problems:
        return 1
    _write("No broken requirements found.")
    return 0


def _satisfies(req, version):
    try:
        return req.specifier.contains(version, prereleases=True)
    except Exception:  # a version packaging cannot read matches no specifier
        return False


def _install_arguments(args):
    """(requirements, requirement files) of a pip install or uninstall command line: the words
    that are neither options nor their values (an -e/--editable PATH as "-e PATH"), and the
    values of -r/--requirement."""
    words, files, i = [], [], 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            return words + args[i:], files
        if not a.startswith("-") or a == "-":
            words.append(a)
            continue
        name, eq, value = a.partition("=")
        if a.startswith("--") and eq:
            pass
        elif a in _INSTALL_VALUES and i < len(args):
            name, value = a, args[i]
            i += 1
        elif a[1] != "-" and a[:2] in _INSTALL_VALUES:
            name, value = a[:2], a[2:]
        if name in ("-r", "--requirement"):
            files.append(value)
        if name in ("-e", "--editable"):
            words.append("-e " + _quote([value]))
    return words, files


_INSTALL_VALUES = {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-t",
                   "--target", "--platform", "--python-version", "--implementation", "--abi",
                   "--root", "--prefix", "--src", "--upgrade-strategy", "-C", "--config-settings",
                   "--global-option", "--install-option", "--no-binary", "--only-binary",
                   "--progress-bar", "--root-user-action", "--report", "-i", "--index-url",
                   "--extra-index-url", "-f", "--find-links", "--python"} | _GLOBAL_VALUES


def _refuse_change(command, args):
    """The refusal of `pip COMMAND ARGS`, naming the envbox command that does it."""
    if command == "install" and any(a in ("-U", "--upgrade") for a in args):
        names, _files = _install_arguments(args)
        plain = [n for n in names if not n.startswith("-e ")]
        upgrades = " ".join("--upgrade-package " + shlex.quote(re.split(r"[\s\[<>=!~;@]", n, 1)[0])
                            for n in plain) or "--upgrade"
        return _Refused(
            "pip cannot upgrade %s: it is an envbox environment, built from its lock and changed "
            "only by envbox. Run instead (outside `envbox run`):\n    envbox lock %s %s && "
            "envbox create %s\n(or `envbox add %s %s` for a package it does not have yet)"
            % (ENV, ENV, upgrades, ENV, ENV,
               " ".join(shlex.quote(n) for n in plain) if plain else "PACKAGE..."))
    if command in ("install", "uninstall"):
        names, files = _install_arguments(args)
        what = " ".join(w if w.startswith("-e ") else shlex.quote(w) for w in names) \
            if names else "PACKAGE..."
        if files and command == "install":
            what += "   (the requirements in %s)" % ", ".join(files)
        return _Refused(
            "pip cannot %s %s %s: it is an envbox environment, built from its lock and changed "
            "only by envbox. Run instead (outside `envbox run`):\n    envbox %s %s %s"
            % (command, "into" if command == "install" else "from", ENV,
               "add" if command == "install" else "remove", ENV, what))
    if command == "download":
        return _Refused(
            "pip download is not available in %s, an envbox environment: `envbox create %s` "
            "fetches the lock's wheels into envbox's store, and `envbox export %s` writes the "
            "lock as a hashed requirements file for pip elsewhere." % (ENV, ENV, ENV))
    if command == "wheel":
        return _Refused(
            "pip wheel is not available in %s, an envbox environment: it installs only the "
            "wheels of its lock and builds none. `envbox add %s PACKAGE` adds a package."
            % (ENV, ENV))
    hint = " (`envbox show %s` describes it)" % ENV if command == "inspect" else ""
    return _Refused(
        "pip %s is not available in %s, an envbox environment%s: envbox's pip answers only "
        "list, freeze, show and check. The environment changes through envbox: `envbox add %s "
        "PACKAGE`, `envbox remove %s PACKAGE`, `envbox lock %s --upgrade`."
        % (command, ENV, hint, ENV, ENV, ENV))


_READERS = {"list": _list, "freeze": _freeze, "show": _show, "check": _check}


def _run(args):
    # The command is the first word after the global options, as pip reads its command line;
    # the global options go to the command's parser with the rest.
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        a, name = args[i], args[i].partition("=")[0]
        if a in _HELP:
            return _help()
        if a in _VERSION:
            _write("pip (envbox shim) for %s from %s (python %d.%d)" %
                   (ENV, os.path.dirname(os.path.abspath(__file__)), *sys.version_info[:2]))
            return 0
        if name == "--python":
            raise _Refused("envbox's pip does not run another interpreter's pip (--python): run "
                           "that interpreter's own pip, outside the environment %s" % ENV, 2)
        i += 2 if name in _GLOBAL_VALUES and "=" not in a else 1
    if i >= len(args) or args[i] == "help":
        return _help()
    command, rest = args[i], args[:i] + args[i + 1:]
    if command not in _READERS:
        raise _refuse_change(command, rest)
    if any(a in _HELP for a in rest):
        return _help()
    return _READERS[command](rest)


def _help():
    _write(USAGE % {"env": ENV})
    return 0


def main(argv=None):
    """pip's entry point: the exit status of the command line `argv` (default sys.argv[1:])."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(args)
    except _Unknown as e:
        sys.stderr.write(
            "ERROR: envbox's pip does not take %s here: it answers list, freeze, show and check "
            "for %s, and the environment changes only through envbox (`envbox add %s PACKAGE`, "
            "`envbox remove %s PACKAGE`).\n" % (e, ENV, ENV, ENV))
        return 2
    except _Refused as e:
        sys.stderr.write("ERROR: %s\n" % e)
        return e.status
    except BrokenPipeError:
        sys.stderr.close()
        return 1
