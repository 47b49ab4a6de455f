"""Load the two runs to compare: a run folder's report.json, checked, and "the previous run" of a script.

Errors are :class:`CompareError` with a message that says what is wrong and
what to do: a folder that does not exist, one without report.json (not a
run folder, or a run that never wrote its report), a report that is not
torchtriage's, and a run that failed (no step time to compare).
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..results.profile_data import OK_STATUSES
from ..report.writer import REPORT_JSON

COMPARE_JSON = "compare.json"


class CompareError(ValueError):
    """A run that cannot be compared; the message says why and what to do."""


@dataclass(frozen=True)
class Run:
    """One finished profile run: its folder and its report.json document."""

    folder: Path
    report: dict[str, Any]

    @property
    def script(self) -> str:
        return str(self.report.get("script") or "")

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def created(self) -> float:
        """When the report was written (seconds since the epoch): its ``created`` field, else the file's mtime."""
        stamp = self.report.get("created")
        if isinstance(stamp, str):
            try:
                return datetime.datetime.fromisoformat(stamp).timestamp()
            except ValueError:
                pass
        try:
            return (self.folder / REPORT_JSON).stat().st_mtime
        except OSError:
            return 0.0

    @property
    def ok(self) -> bool:
        return self.report["status"].get("status") in OK_STATUSES and int(self.report.get("steps_profiled") or 0) > 0


def _read_report(folder: Path) -> dict[str, Any]:
    path = folder / REPORT_JSON
    if not path.is_file():
        if (folder / "profile.json").is_file():
            why = "its report failed to build (profile.json is there: its warnings say why)"
        elif (folder / "output.log").is_file() or (folder / "agent.json").is_file():
            why = "the run ended before writing its report (see output.log there)"
        else:
            why = "it is not the folder of a `torchtriage profile` run"
        raise CompareError(f"{folder} has no report.json: {why}")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CompareError(f"{path} cannot be read as JSON ({exc})") from None
    if not isinstance(report, dict) or not isinstance(report.get("status"), dict) or "step_time_ms" not in report:
        raise CompareError(f"{path} is not a torchtriage report.json")
    version = str(report.get("schema_version", ""))
    if not version.startswith("1."):
        raise CompareError(f"{path} has report schema {version or 'unknown'}; this torchtriage reads 1.x")
    return report


def load_run(path: Path | str, require_ok: bool = True) -> Run:
    """The run in ``path`` (a run folder, or its report.json); a failed run is an error unless ``require_ok`` is False."""
    given = Path(path).expanduser()
    folder = given.parent if given.is_file() else given
    if not folder.is_dir():
        raise CompareError(f"no such run folder: {given}")
    run = Run(folder.resolve(), _read_report(folder))
    if require_ok and not run.ok:
        status = run.report["status"]
        what = status.get("status", "failed")
        message = status.get("message") or "no steps were profiled"
        raise CompareError(
            f"the run in {run.folder} did not record its steps ({what}: {message}): it has no step time to compare; "
            "fix the script and profile it again"
        )
    return run


def previous_run(run: Run, folders: Iterable[Path] | None = None) -> Run:
    """The latest successful run of the same script written before ``run``: among ``folders``, by default
    the other folders of its runs folder (its parent)."""
    candidates: list[Run] = []
    skipped = 0
    for folder in sorted(folders if folders is not None else run.folder.parent.iterdir()):
        if folder.resolve() == run.folder or folder.name.startswith(".") or not (folder / REPORT_JSON).is_file():
            continue
        try:
            other = load_run(folder, require_ok=False)
        except CompareError:
            continue
        if other.script != run.script or other.created >= run.created:
            continue
        if not other.ok:
            skipped += 1
            continue
        candidates.append(other)
    if not candidates:
        failed = f" ({skipped} earlier run{'s' if skipped != 1 else ''} failed)" if skipped else ""
        raise CompareError(
            f"no earlier successful run of {Path(run.script).name or 'this script'} in {run.folder.parent}{failed}: "
            "profile the script before the change (same --out parent folder), then after it"
        )
    return max(candidates, key=lambda r: (r.created, r.name))
