"""Which source files count as the user's code (the roots the host names, what this interpreter imports from
outside its installed libraries; never site-packages, dist-packages, the standard library or torch)."""

from __future__ import annotations

import json
import os
import site
import sys
import sysconfig
from typing import Dict, Iterable, List, Optional
from urllib.parse import unquote, urlparse

_LIBRARY_PARTS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _library_prefixes(extra: Iterable[str]) -> List[str]:
    paths = set(extra)
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            paths.add(sysconfig.get_paths()[name])
        except KeyError:
            pass
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # virtualenv's old site.py
        pass
    return sorted({os.path.realpath(p).rstrip(os.sep) + os.sep for p in paths if p}, key=len, reverse=True)


class UserCode:
    """Answers ``is_user(filename)`` with a per-instance cache."""

    def __init__(self, roots: Iterable[str], excluded: Iterable[str] = ()) -> None:
        self.cwd = os.getcwd()
        self.roots = sorted({os.path.realpath(r).rstrip(os.sep) + os.sep for r in roots}, key=len, reverse=True)
        self.excluded = _library_prefixes(excluded)
        self._cache: Dict[str, str] = {}
        self._verdicts: Dict[str, bool] = {}

    def absolute(self, filename: str) -> str:
        """Absolute, symlink-resolved form of a code filename ('' for pseudo files)."""
        known = self._cache.get(filename)
        if known is not None:
            return known
        if not filename or filename.startswith("<"):
            path = ""
        else:
            path = os.path.realpath(os.path.join(self.cwd, filename))
        self._cache[filename] = path
        return path

    def is_user(self, filename: str) -> bool:
        known = self._verdicts.get(filename)
        if known is None:
            known = self._verdicts[filename] = self._classify(self.absolute(filename))
        return known

    def _classify(self, path: str) -> bool:
        if not path or any(part in path for part in _LIBRARY_PARTS):
            return False
        root = max((len(r) for r in self.roots if path.startswith(r)), default=0)
        library = max((len(p) for p in self.excluded if path.startswith(p)), default=0)
        return root > library


def default_roots(script: str) -> List[str]:
    """The script's folder and the working directory."""
    return [os.path.dirname(os.path.abspath(script)), os.getcwd()]


def import_roots(excluded: Iterable[str] = (), path: Optional[Iterable[str]] = None) -> List[str]:
    """The folders this interpreter imports from that no installer manages: ``PYTHONPATH`` entries, the
    folders ``.pth`` files add (``setup.py develop``, ``conda develop``, editable installs that add their
    source folder), and the project folders of editable installs (``direct_url.json`` with
    ``dir_info.editable``, which also covers those whose ``.pth`` installs an import hook instead).

    They are found here, inside the interpreter that runs the script, and not by the host: the script may
    run under another interpreter (``--python``), whose site-packages and ``.pth`` files the host cannot
    see without starting it, and ``sys.path`` already holds what that interpreter made of ``PYTHONPATH``
    and the ``.pth`` files.  ``path``: the entries to read (default ``sys.path``, read before the script
    runs).  Entries in a library (site-packages, the standard library, ``excluded``, a folder pip installed
    packages into) are left out."""
    libraries = _library_prefixes(excluded)
    found: List[str] = []
    for entry in [*(sys.path if path is None else path), *_editable_projects()]:
        if not isinstance(entry, str) or not os.path.isdir(entry or os.curdir):
            continue  # zip archives, folders that do not exist
        real = os.path.realpath(entry or os.curdir).rstrip(os.sep) + os.sep
        if any(part in real for part in _LIBRARY_PARTS) or any(real.startswith(p) for p in libraries) or _installed_into(real):
            continue
        if real not in found:
            found.append(real)
    return found


def _installed_into(folder: str) -> bool:
    """Whether pip installed packages into FOLDER (``pip install --target``: ``*.dist-info`` beside them): a
    ``PYTHONPATH`` entry like that holds libraries, not the user's code (on the GPU machine, the wheels carried
    there made IPython's and traitlets' files "yours" in a ``%%torchtriage`` report)."""
    try:
        with os.scandir(folder) as entries:
            return any(entry.name.endswith(".dist-info") and entry.is_dir() for entry in entries)
    except OSError:
        return False


def _editable_projects() -> List[str]:
    """The source folders of the editable installs this interpreter sees (PEP 610's ``direct_url.json``)."""
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python 3.7
        return []
    folders: List[str] = []
    try:
        for dist in metadata.distributions():
            try:
                text = dist.read_text("direct_url.json")
                data = json.loads(text) if text else None
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict) or not (data.get("dir_info") or {}).get("editable"):
                continue
            url = urlparse(str(data.get("url", "")))
            if url.scheme == "file" and url.path:
                folders.append(unquote(url.path))
    except Exception:  # a broken distribution must not stop the run: its folder is just not user code
        return folders
    return folders
