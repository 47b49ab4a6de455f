"""Paths a request names, kept inside the server's root (no traversal, no symlinks out, no absolute paths)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

RUNS = (".torchtriage", "runs")
MAX_DEPTH = 4  # folders below the root searched for .torchtriage/runs


class OutsideRoot(ValueError):
    """The path is absolute, climbs out, or resolves (through a symlink) outside the root."""


def inside(root: Path, relative: str) -> Path:
    """``root / relative`` resolved, or OutsideRoot."""
    if not relative or "\x00" in relative:
        raise OutsideRoot("no path given")
    posix = PurePosixPath(relative.replace("\\", "/"))
    if posix.is_absolute() or relative.startswith("~") or ".." in posix.parts or ":" in (posix.parts or ("",))[0]:
        raise OutsideRoot(f"{relative!r} is not a relative path inside the server root")
    real_root = root.resolve()
    target = (real_root / Path(*posix.parts)).resolve()
    if target != real_root and real_root not in target.parents:
        raise OutsideRoot(f"{relative!r} leads outside the server root")
    return target


def run_folders(root: Path) -> list[Path]:
    """Run folders (holding report.json) under ``<dir>/.torchtriage/runs/`` for dirs up to MAX_DEPTH below root,
    without following symlinks out of the root."""
    real_root = root.resolve()
    found: list[Path] = []
    for current, dirs, _files in os.walk(real_root):
        here = Path(current)
        depth = len(here.relative_to(real_root).parts)
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__") and depth < MAX_DEPTH]
        runs = here.joinpath(*RUNS)
        if runs.is_dir():
            for run in runs.iterdir():
                report = run / "report.json"
                try:
                    real = report.resolve(strict=True)
                except OSError:
                    continue
                if real_root in real.parents:
                    found.append(run)
    return found
