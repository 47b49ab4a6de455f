"""Profile deltas in the editor: each re-profile is compared with the document's previous one.

The server keeps the report paths of each document's last profiles.  After a
``torchtriage.profile`` the new run is compared with the one before it (the
runtime's ``compare``: compare.json and the report.html section are written
into the new run's folder), the hot-line hints show the change
(``12.1 ms/step (−30 ms)``) and the ``torchtriage/profileReport``
notification carries the comparison.  ``torchtriage.compare`` compares two
run folders, or a document's last profile with the one before it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pygls.exceptions import JsonRpcInvalidParams

from ..runtime.compare import CompareError, Run, compare_runs, load_run, previous_run, write_comparison
from ..runtime.compare.verdict import ms

log = logging.getLogger(__name__)

KEEP = 2  # report paths kept per document: the last profile and the one before it
NO_CHANGE = "no change"

# (path, line) of a hot line in the new run -> (change in ms per step, whether it exceeds the spread)
LineDeltas = dict[tuple[str, int], tuple[float, bool]]


def delta_label(delta_ms: float, measurable: bool) -> str:
    """``(−30 ms)``, ``(+1.2 ms)``, or ``(no change)`` within the spread."""
    if not measurable:
        return f"({NO_CHANGE})"
    sign = "+" if delta_ms > 0 else "\u2212"
    return f"({sign}{ms(delta_ms)} ms)"


def hot_line_deltas(document: dict[str, Any]) -> LineDeltas:
    """The change of each hot line of the newer run, by its path and line in that run."""
    deltas: LineDeltas = {}
    for row in document.get("lines") or []:
        after = row.get("after")
        if after and after.get("hot"):
            deltas[(after["path"], after["line"])] = (float(row["delta_ms"]), bool(row["measurable"]))
    return deltas


def _path_argument(value: Any, name: str) -> Path:
    """A run folder given as a path or a file URI."""
    if not isinstance(value, str) or not value:
        raise JsonRpcInvalidParams(f"expected `{name}` to be a run folder (or its report.json), as a path or file URI")
    return Path(unquote(urlparse(value).path)) if value.startswith("file:") else Path(value)


def _earlier_runs(after: Run) -> list[Path]:
    """Where the editor's earlier runs of a document are: the siblings of the run folder, and for runs
    made by ``torchtriage.profile`` (each in ``<folder>/run``) the ``run`` folders of the siblings of that."""
    folders = [p for p in after.folder.parent.iterdir() if p.is_dir()]
    if after.folder.name == "run":
        folders += [p / "run" for p in after.folder.parent.parent.iterdir() if (p / "run").is_dir()]
    return folders


class ProfileComparisons:
    """The last profiles of each document, and comparisons between runs."""

    def __init__(self) -> None:
        self._reports: dict[str, list[str]] = {}

    def after_profile(self, uri: str, report_path: Path) -> dict[str, Any] | None:
        """Remember this profile; compare it with the document's previous one (None when there is none,
        or when that run can no longer be read: a temporary folder removed since, say)."""
        reports = self._reports.setdefault(uri, [])
        previous = reports[-1] if reports else None
        reports.append(str(report_path))
        del reports[:-KEEP]
        if previous is None:
            return None
        try:
            document, path = self._compare(load_run(Path(previous).parent), load_run(report_path.parent))
        except (CompareError, OSError) as exc:
            log.warning("no comparison with the previous profile: %s", exc)
            return None
        return {"comparePath": str(path), "previousReportPath": previous, "verdict": document["verdict"]["text"], "document": document}

    def command(self, arguments: list[Any] | None) -> dict[str, Any]:
        """``torchtriage.compare {runA, runB}`` or ``{uri, baseline: "last"}``: the compare.json document."""
        value = arguments[0] if arguments else None
        if not isinstance(value, dict):
            raise JsonRpcInvalidParams('expected {"runA": folder, "runB": folder} or {"uri": uri, "baseline": "last"}')
        try:
            if "runA" in value or "runB" in value:
                before = load_run(_path_argument(value.get("runA"), "runA"))
                after = load_run(_path_argument(value.get("runB"), "runB"))
            elif value.get("baseline") == "last" and isinstance(value.get("uri"), str):
                before, after = self._last_two(value["uri"])
            else:
                raise JsonRpcInvalidParams('expected {"runA", "runB"}, or {"uri", "baseline": "last"}')
            return self._compare(before, after)[0]
        except CompareError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None

    def _last_two(self, uri: str) -> tuple[Run, Run]:
        reports = self._reports.get(uri) or []
        if not reports:
            raise JsonRpcInvalidParams(f"{uri} has not been profiled in this session: run torchtriage.profile first")
        after = load_run(Path(reports[-1]).parent)
        before = load_run(Path(reports[-2]).parent) if len(reports) >= 2 else previous_run(after, _earlier_runs(after))
        return before, after

    @staticmethod
    def _compare(before: Run, after: Run) -> tuple[dict[str, Any], Path]:
        document = compare_runs(before, after)
        return document, write_comparison(document, after)
