"""The folders whose code is the user's, as the host finds them (runs, the ``%%torchtriage`` magic).

Runtime attribution charges time to the innermost frame in user code, so what counts decides which
lines a report names.  The host names:

- the project the script belongs to: the nearest folder above it with a ``pyproject.toml``,
  ``setup.py``, ``setup.cfg`` or ``.git`` (:func:`torchtriage.checker.project_root`, the project the
  static check analyses), so ``scripts/train.py`` or ``projects/adder/adder.py`` charge the package
  at the project's root instead of the call into it; the same for the working directory.  A project
  root that is the home folder or ``/`` (a dotfiles repository) is not taken: the script's folder is;
- the script's folder and the working directory;
- the folders asked for (``--user-root``; the editor passes its workspace folders that hold the script).

The agent adds, inside the interpreter that runs the script, the folders that interpreter imports
from outside its libraries: ``PYTHONPATH`` entries and editable installs
(``agent/usercode.py: import_roots``) — it is the one that sees the ``--python`` interpreter's
site-packages and ``.pth`` files (the magic's cells run in this interpreter: :func:`in_process_user_roots`
adds them here).  Installed code stays library code under any root: site-packages,
dist-packages, the standard library and torch (``agent/usercode.py: UserCode``), so a root that
holds a virtual environment does not make its packages the user's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional


def host_user_roots(script: Optional[Path], cwd: Path, extra: Iterable[Path] = ()) -> list[str]:
    """The roots for a run of ``script`` (None: cells, no script file) from ``cwd``, then ``extra``; absolute, no repeats."""
    from ...checker import project_root  # the linter's modules load only when a run starts

    roots: list[Path] = []
    for folder in ([script.resolve().parent] if script is not None else []) + [cwd.resolve()]:
        project = project_root(folder / "__file__.py")  # project_root takes a file and starts from its folder
        roots += [folder if _too_broad(project) else project, folder]
    roots += [Path(p).expanduser().resolve() for p in extra]
    seen: list[str] = []
    for root in roots:
        if str(root) not in seen:
            seen.append(str(root))
    return seen


def _too_broad(folder: Path) -> bool:
    """The home folder or the file system's root: a project marker there is not the user's project."""
    if folder == Path(folder.anchor):
        return True
    home = os.path.expanduser("~")
    return home not in ("~", "") and folder == Path(home).resolve()


def in_process_user_roots(cwd: Path) -> list[str]:
    """The roots for code run in this interpreter (the ``%%torchtriage`` magic's cells, no script file):
    the working directory and its project, and what this interpreter imports from outside its libraries."""
    from ..agent.usercode import import_roots

    return [*host_user_roots(None, cwd), *import_roots()]
