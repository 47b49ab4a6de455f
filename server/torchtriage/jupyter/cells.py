"""The kernel's cells as files: which execution count a code filename stands for.

IPython compiles each cell under a file name of its own (ipykernel:
``/tmp/ipykernel_<pid>/<hash>.py``) that exists only in ``linecache``, and keeps
the map from that name to the execution count.  A profile charges time to
those names; here they become real files in the run folder
(``cells/cell-<n>.py``, lines as in the cell) so the report can show their
source, and each keeps its execution count so the host can say "In [3]".
"""

from __future__ import annotations

import linecache
import os
from pathlib import Path
from typing import Any, Iterable

from ..findings import Finding


class KernelCells:
    """Cell files of one IPython shell, and the files of cells profiled so far."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.profiled: dict[str, int] = {}  # file a profiled cell was compiled from -> execution count

    def compiled(self) -> dict[str, int]:
        """IPython's cell file names -> execution counts (empty when this IPython keeps no map)."""
        mapping = getattr(getattr(self.shell, "compile", None), "_filename_map", None) or {}
        return {str(name): int(number) for name, number in mapping.items() if isinstance(number, int)}

    def current(self) -> int:
        """The execution count of the cell running now: IPython caches it under its number before running it
        (the shell's own counter is already one ahead in IPython 8+)."""
        numbers = self.compiled().values()
        return max(numbers) if numbers else int(self.shell.execution_count)

    def roots(self) -> list[str]:
        """Folders whose code counts as the user's: where the kernel keeps cells, and profiled cells' folders."""
        folders = {os.path.dirname(name) for name in self.compiled() if os.path.isabs(name)}
        folders |= {os.path.dirname(path) for path in self.profiled}
        return sorted(f for f in folders if f)

    def materialise(self, run_dir: Path, current: int) -> dict[str, str]:
        """Write each earlier cell's source to ``run_dir/cells``; returns kernel file name -> written path."""
        written: dict[str, str] = {}
        folder = run_dir / "cells"
        for name, number in self.compiled().items():
            if number >= current:
                continue
            lines = linecache.cache.get(name)
            if not lines or not isinstance(lines[2], list):
                continue
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"cell-{number}.py"
            target.write_text("".join(lines[2]), encoding="utf-8")
            written[name] = written[os.path.realpath(name)] = str(target.resolve())
        return written

    def notebook(self, current: int, renames: dict[str, str]) -> tuple[list[str], list[int], dict[int, str]]:
        """In [1] .. In [current] as a notebook's code cells: their texts, their numbers, and the file the
        profile knows each cell as (number -> path; ``renames`` from :meth:`materialise`).

        A cell with a file (a profiled cell's own, else the one materialised in the run folder) is that
        file's text, so a finding's lines are the lines the profile charges; a cell with none is its
        input as typed, there for what it defines."""
        files = {n: path for path in renames.values() if (n := self.number_of(path)) is not None}
        files.update((n, path) for path, n in self.profiled.items() if n <= current)
        manager = getattr(self.shell, "history_manager", None)
        typed = list(getattr(manager, "input_hist_raw", None) or self.shell.user_ns.get("In", None) or [])
        texts: list[str] = []
        numbers: list[int] = []
        for number in range(1, current + 1):
            text = _read(files[number]) if number in files else None
            if text is None:
                files.pop(number, None)
                text = str(typed[number]) if number < len(typed) else ""
            if text.strip():
                texts.append(text)
                numbers.append(number)
        return texts, numbers, {n: files[n] for n in numbers if n in files}

    def number_of(self, path: str) -> int | None:
        """The execution count a (materialised or profiled) cell file stands for."""
        if path in self.profiled:
            return self.profiled[path]
        name = os.path.basename(path)
        if name.startswith("cell-") and name.endswith(".py") and os.path.basename(os.path.dirname(path)) == "cells":
            try:
                return int(name[len("cell-"):-len(".py")])
            except ValueError:
                return None
        return None


def remap_paths(raw: dict[str, Any], renames: dict[str, str]) -> dict[str, Any]:
    """agent.json with the kernel's cell file names replaced by the materialised files (a new dict)."""
    if not renames:
        return raw
    out = dict(raw)
    out["sites"] = [[row[0], renames.get(row[1], row[1]), *row[2:]] for row in raw.get("sites", [])]
    for key in ("samples", "worker_samples"):
        out[key] = [[row[0], renames.get(row[1], row[1]), *row[2:]] for row in raw.get(key, [])]
    return out


def findings_in_files(findings: Iterable[Finding], files: dict[int, str]) -> list[Finding]:
    """Findings of notebook cells (cell-local spans, ``cell.cell`` the execution count) on the file each
    cell is known as (:meth:`KernelCells.notebook`); those in cells with no file are left out."""
    return [f.with_changes(path=files[f.cell.cell]) for f in findings if f.cell is not None and f.cell.cell in files]


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
