"""A trace file in the server root opened as a report: ``torchtriage analyze`` on it, once per version of the file.

The run folder goes beside the trace (``<trace's folder>/.torchtriage/runs/<time>-analyze-<name>``, where the
runs panel lists it; under the root's own ``.torchtriage/runs`` when that folder cannot be written), with the
trace's folders up to the server root as the source roots, nearest first (a trace written to ``proj/log/``
names ``train.py`` relative to ``proj/``), so the hot lines name the root's files.  A run of the same trace that is newer
than the file is reused.  The analysis runs as ``python -m torchtriage analyze`` in a process of its own (a
large trace takes a while; a bad one is a message, never the server's problem); requests for a trace already
being analysed wait for that run.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from .paths import RUNS


class TraceFailed(Exception):
    """The trace cannot be analysed (the CLI's message)."""


def run_name(trace: Path) -> str:
    """``analyze-<name>``, as ``torchtriage analyze`` names its run folders (imported when used: the server starts without it)."""
    from ..runtime.offline.analyze import run_name as name

    return name(trace)


def _source_path(report_path: Path) -> str | None:
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    source = report.get("source") if isinstance(report, dict) else None
    return str(source.get("path")) if isinstance(source, dict) and source.get("path") else None


def previous_run(trace: Path, bases: list[Path]) -> Path | None:
    """The newest run folder under ``bases`` analysed from ``trace`` after its last change, or None."""
    try:
        changed = trace.stat().st_mtime
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
            if written >= changed and _source_path(report) == str(trace):
                found.append((written, report.parent))
    return max(found)[1] if found else None


def _new_run_folder(trace: Path, root: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for base in (trace.parent, root):
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


async def _analyze(trace: Path, root: Path) -> Path:
    out = _new_run_folder(trace, root)
    real_root = root.resolve()
    roots = [folder for folder in trace.parents if folder == real_root or real_root in folder.parents]
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
    return out


class TraceRuns:
    """The analyses in flight, by trace path, so that a trace opened twice is analysed once."""

    def __init__(self) -> None:
        self._running: dict[Path, asyncio.Future[Path]] = {}

    async def run_for(self, trace: Path, root: Path) -> tuple[Path, bool]:
        """The run folder of ``trace`` (resolved, inside ``root``) and whether it was analysed before."""
        previous = previous_run(trace, [trace.parent, root])
        if previous is not None:
            return previous, True
        running = self._running.get(trace)
        if running is None:
            running = asyncio.ensure_future(_analyze(trace, root))
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
    }
