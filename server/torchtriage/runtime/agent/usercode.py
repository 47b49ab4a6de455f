"""Which source files count as the user's code (script folder / cwd, not libraries)."""

from __future__ import annotations

import os
import site
import sysconfig
from typing import Dict, Iterable, List

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
