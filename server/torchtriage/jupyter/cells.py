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
from typing import Any


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
