"""A trace file or a folder of traces in the server root opened as a report: ``torchtriage analyze`` on it, once
per version of it.

The run folder goes beside the trace (``<trace's folder>/.torchtriage/runs/<time>-analyze-<name>``, where the
runs panel lists it; under the root's own ``.torchtriage/runs`` when that folder cannot be written), with the
trace's folders up to the server root as the source roots, nearest first (a trace written to ``proj/log/``
names ``train.py`` relative to ``proj/``), so the hot lines name the root's files.  A run of the same trace that is newer
than the file is reused.  The analysis runs as ``python -m torchtriage analyze`` in a process of its own (a
large trace takes a while; a bad one is a message, never the server's problem); requests for a trace already
being analysed wait for that run.

A folder (a ``tensorboard_trace_handler`` logdir, a folder of per-rank traces) is analysed the same way, its run
folder beside the folder (the root's when the folder is the root): with several workers the run folder shows the
first rank's report with the ``ranks`` section, each worker's own report in a subfolder (``workers``).  The run
folder names what was opened in ``opened.txt`` (a folder's report names its first trace, not the folder) and,
for a folder, its trace files then: a folder has changed when one of its trace files has, or one was added or removed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from .paths import RUNS

OPENED = "opened.txt"  # in a run folder: the trace or folder it was analysed from (not *.json: a folder's traces are *.json)
NO_TRACES = "no trace files in this folder (*.pt.trace.json, *.json or *.json.gz)"


class TraceFailed(Exception):
    """The trace cannot be analysed (the CLI's message)."""


def run_name(trace: Path) -> str:
    """``analyze-<name>``, as ``torchtriage analyze`` names its run folders (imported when used: the server starts without it)."""
    from ..runtime.offline.analyze import run_name as name

    return name(trace)


def trace_files(folder: Path) -> list[Path]:
    """The trace files ``torchtriage analyze`` reads in ``folder`` (imported when used, like ``run_name``)."""
    from ..runtime.offline.workers import trace_files as files

    return files(folder)


def listed(trace: Path) -> list[Path]:
    """A folder's trace files (listed once per request: both ``opened`` and ``last_change`` read them); [] for a file."""
    return trace_files(trace) if trace.is_dir() else []


def opened(trace: Path, files: list[Path]) -> list[str]:
    """What a run of ``trace`` records in ``opened.txt``: its path, and for a folder its trace files
    (``files``, from ``listed``; relative to it)."""
    return [str(trace), *(file.relative_to(trace).as_posix() for file in files)]


def _opened_before(report_path: Path) -> list[str] | None:
    """What the run was analysed from: its ``opened.txt``, else (a run not made here) its report's trace."""
    try:
        return (report_path.parent / OPENED).read_text(encoding="utf-8").splitlines()
    except OSError:
        pass
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    source = report.get("source") if isinstance(report, dict) else None
    return [str(source.get("path"))] if isinstance(source, dict) and source.get("path") else None


def last_change(trace: Path, files: list[Path]) -> float:
    """When the trace file last changed; for a folder, its newest trace file (``files``, from ``listed``; OSError
    when gone).  A trace file added or removed changes what ``opened`` lists."""
    return max(file.stat().st_mtime for file in files) if files else trace.stat().st_mtime


def run_bases(trace: Path, root: Path) -> list[Path]:
    """The folders whose ``.torchtriage/runs`` hold the trace's runs: its parent folder (inside the root), then the root."""
    real_root = root.resolve()
    parent = trace.parent
    nearest = [parent] if parent == real_root or real_root in parent.parents else []
    return nearest + [real_root]


def previous_run(trace: Path, bases: list[Path], files: list[Path]) -> Path | None:
    """The newest run folder under ``bases`` analysed from ``trace`` (its trace ``files``, from ``listed``) after
    its last change, or None."""
    try:
        changed, now = last_change(trace, files), opened(trace, files)
    except OSError:
        return None
    found = []
    for base in bases:
        runs = base.joinpath(*RUNS)
        for report in runs.glob(f"*-{run_name(trace)}*/report.json") if runs.is_dir() else ():
            try:
                written = report.stat().st_mtime
            except OSError:
                continue
            if written >= changed and _opened_before(report) == now:
                found.append((written, report.parent))
    return max(found)[1] if found else None


def _new_run_folder(trace: Path, root: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for base in run_bases(trace, root):
        runs = base.joinpath(*RUNS)
        try:
            runs.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        folder, n = runs / f"{stamp}-{run_name(trace)}", 1
        while folder.exists():
            n += 1
            folder = runs / f"{stamp}-{run_name(trace)}-{n}"
        return folder
    raise TraceFailed(f"no folder to write the run in (neither {trace.parent} nor {root} can be written)")


async def _analyze(trace: Path, root: Path, files: list[Path]) -> Path:
    analysed = opened(trace, files)  # listed before the run folder is made (the root's folder may be the one opened)
    out = _new_run_folder(trace, root)
    real_root = root.resolve()
    searched = [trace, *trace.parents] if trace.is_dir() else list(trace.parents)
    roots = [folder for folder in searched if folder == real_root or real_root in folder.parents]
    options = [option for folder in roots for option in ("--source-root", str(folder))]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "torchtriage", "analyze", "--quiet", "--out", str(out), *options, str(trace),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, cwd=str(trace.parent),
    )
    _, stderr = await process.communicate()
    if process.returncode != 0 or not (out / "report.json").is_file():
        lines = [line for line in stderr.decode("utf-8", errors="replace").splitlines() if line.strip()]
        message = "\n".join(lines[-6:]) or f"torchtriage analyze exited with {process.returncode}"
        raise TraceFailed(message)
    (out / OPENED).write_text("".join(line + "\n" for line in analysed), encoding="utf-8")
    return out


class TraceRuns:
    """The analyses in flight, by trace path, so that a trace opened twice is analysed once."""

    def __init__(self) -> None:
        self._running: dict[Path, asyncio.Future[Path]] = {}

    async def run_for(self, trace: Path, root: Path) -> tuple[Path, bool]:
        """The run folder of ``trace`` (a file or folder, resolved, inside ``root``) and whether it was analysed before."""
        files = listed(trace)
        if trace.is_dir() and not files:
            shown = trace.relative_to(root.resolve()).as_posix()
            raise TraceFailed(f"{shown}: {NO_TRACES}")
        previous = previous_run(trace, run_bases(trace, root), files)
        if previous is not None:
            return previous, True
        running = self._running.get(trace)
        if running is None:
            running = asyncio.ensure_future(_analyze(trace, root, files))
            self._running[trace] = running
            running.add_done_callback(lambda _: self._running.pop(trace, None))
        return await asyncio.shield(running), False


def summary(report: dict[str, Any], root: Path) -> dict[str, Any]:
    """What the report widget shows above report.html: the verdict, the top hot lines (paths relative to the root)."""
    real_root = root.resolve()
    bottleneck = report.get("bottleneck") or {}
    lines = []
    for hotspot in (report.get("hotspots") or [])[:5]:
        if not isinstance(hotspot, dict):
            continue
        path = str(hotspot.get("path", ""))
        try:
            shown = Path(path).resolve().relative_to(real_root).as_posix() if Path(path).is_absolute() else path
        except (OSError, ValueError):
            shown = path
        lines.append({"path": shown, "line": hotspot.get("line"), "share": hotspot.get("share"),
                      "ms_per_step": hotspot.get("self_ms_per_step"), "category": hotspot.get("category")})
    return {
        "bottleneck": bottleneck.get("kind"),
        "share": bottleneck.get("share"),
        "step_time_ms": report.get("step_time_ms"),
        "steps_profiled": report.get("steps_profiled"),
        "gpu_busy": (report.get("gpu_busy") or {}).get("share"),
        "hot_lines": lines,
        "warnings": [str(w) for w in (report.get("warnings") or [])][:5],
        "ranks": (report.get("ranks") or {}).get("covered") or [],
        "shown_rank": (report.get("ranks") or {}).get("shown_rank"),
    }


def workers(run: Path, report: dict[str, Any], root: Path) -> list[dict[str, Any]]:
    """A folder's workers, each with its own run folder (relative to the root) and rank, by rank then name; [] for one trace."""
    real_root = root.resolve()
    ranks: dict[str, Any] = {}
    for entry in (report.get("ranks") or {}).get("per_rank") or []:
        if isinstance(entry, dict) and entry.get("report"):
            ranks[Path(str(entry["report"])).parent.name] = entry.get("rank")
    found = []
    for folder in sorted(run.iterdir()) if run.is_dir() else ():
        try:
            relative = folder.resolve().relative_to(real_root).as_posix()
        except (OSError, ValueError):
            continue
        if folder.is_dir() and (folder / "report.json").is_file():
            found.append({"name": folder.name, "rank": ranks.get(folder.name), "run": relative})
    return sorted(found, key=lambda w: (w["rank"] is None, w["rank"] or 0, w["name"]))
