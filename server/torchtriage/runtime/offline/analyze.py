"""``analyze_trace(PATH)``: a trace recorded anywhere -> the run folder ``torchtriage profile`` writes.

The stages: pick the trace (``inputs``), read it in runs of whole events into
compact records while noting its steps, threads and GPU busy spans
(``reader``, ``trace_event``, ``events``, ``gpu_spans``),
put the records in time order with bounded memory (``ordering``), sweep them
into the agent's wire records (``sweep``, which also looks at the stepping
thread in the largest GPU idle gaps: ``gaps``), and hand those to the same host code
as a profiled run: ``build_profile`` -> diagnosis -> report.json / report.html
(``profiling.finish.write_outputs``).  Bad input raises ``TraceError`` with a
one-line message; a trace that can be partly used gives a report with warnings.
A folder of several workers' traces (ranks of one job, or separate runs) is
analysed worker by worker into subfolders of the run folder (``ranks``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ..attribution.lines import build_profile
from ..profiling.finish import new_run_dir, write_outputs
from ..profiling.static_helper import StaticHelper
from ..report.shape_table import SHAPE_ROWS
from ..results.profile_data import ProfileData
from .events import PY, TraceScan
from .frames import CodeMap
from .gaps import plan, trace_gaps
from .inputs import Choice, choose_trace
from .ordering import RUN, SortedRecords
from .pattern_block import add_patterns
from .raw import gpu_busy_block, raw_record, source_block
from .ranks import analyze_workers
from .reader import TraceError, read_events
from .steps import find_steps
from .sweep import Sweep
from .workers import list_workers

__all__ = ["AnalyzedRun", "PathMap", "TraceError", "analyze_trace", "run_name"]

Stage = Callable[[str], None]
PathMap = Sequence[tuple[str, str]]  # --path-map FROM=TO pairs
SCAN_BATCH = 8_192  # events scanned between checks of the sorter's run size


@dataclass(frozen=True)
class AnalyzedRun:
    """The analysed trace, its profile, report.json (None when the report failed) and the run folder;
    for a folder of several workers, the shown worker's trace and every worker's own run (``workers``)."""

    trace: Path
    profile: ProfileData
    report: Optional[dict[str, Any]]
    run_dir: Path
    raw: dict[str, Any] = field(default_factory=dict)  # the agent.json-shaped record the profile was built from
    workers: list["AnalyzedRun"] = field(default_factory=list)


def run_name(trace: Path) -> str:
    """``analyze-<name>`` for the run folder: the file name without its trace suffixes and timestamp."""
    name = re.sub(r"(\.pt\.trace)?\.json(\.gz)?$", "", Path(trace).name)
    name = re.sub(r"\.\d{10,}$", "", name)
    return "analyze-" + (re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "trace")


def analyze_trace(path: Path, out_dir: Optional[Path] = None, on_stage: Optional[Stage] = None, run_size: int = RUN,
                  roots: Sequence[Path] = (), path_map: PathMap = ()) -> AnalyzedRun:
    """Analyse the trace at PATH (a file, or a folder of them) and write the run folder (default
    ``.torchtriage/runs/<time>-analyze-<name>``).  ``roots``: folders to find the trace's relative
    file names in before the trace's folder and the current one; ``path_map``: (FROM, TO) prefixes
    rewritten first; ``run_size``: records sorted in memory at a time."""
    stage = on_stage or (lambda _: None)
    if Path(path).is_dir():
        found = list_workers(Path(path))
        if len(found.workers) > 1:
            return analyze_workers(found, out_dir, stage, lambda trace, out: analyze_trace(trace, out, on_stage, run_size, roots, path_map))
    choice = choose_trace(Path(path))
    with StaticHelper.start() as helper:  # loads the linter on another core while this one reads and sweeps
        return _analyze_one(choice, out_dir, stage, on_stage, run_size, roots, path_map, helper)


def _analyze_one(choice: Choice, out_dir: Optional[Path], stage: Stage, on_stage: Optional[Stage], run_size: int,
                 roots: Sequence[Path], path_map: PathMap, helper: StaticHelper) -> AnalyzedRun:
    """``analyze_trace`` for one chosen trace file, its hot files checked by ``helper``."""
    stage(f"reading {choice.path}")
    header, events = read_events(choice.path)
    scan = TraceScan()
    records = SortedRecords(run=run_size)
    try:
        while True:  # the events a few thousand at a time, each record appended, the sorter's run checked between
            before = scan.events
            scan.scan(itertools.islice(events, SCAN_BATCH), records.append)
            records.settle()
            if scan.events - before < SCAN_BATCH:
                break
        if not records.count and not scan.steps:
            raise TraceError(f"{choice.path}: the trace holds no events torch.profiler records (operators, Python frames, GPU activity)")
        steps, main, step_warnings = find_steps(scan)
        if not steps:
            raise TraceError(f"{choice.path}: no step to analyse: no ProfilerStep# range and no operator or Python frame on a CPU thread")
        stage("attributing the recorded time to lines")
        code = CodeMap(choice.path.parent, roots=roots, path_map=path_map)
        sweep = Sweep(steps, main, code, call_stacks=not scan.counts[PY])
        sweep.gaps = plan(scan.gpu.idle(sweep.clock.steps), sweep.main_thread)
        sweep.feed(records)
        sweep.finish()
    finally:
        records.close()
    raw = raw_record(header, scan, sweep, code, choice, step_warnings)
    raw["gaps"] = trace_gaps(sweep.gaps, sweep.callsites, code)
    run_dir = Path(out_dir).resolve() if out_dir is not None else new_run_dir(run_name(choice.path))
    extra: dict[str, Any] = {"run_dir": str(run_dir), "chrome_trace": str(choice.path.resolve()),
                             "source": source_block(header, scan, choice)}
    busy = gpu_busy_block(sweep)
    if busy is not None:
        extra["gpu_busy"] = busy
    if not scan.counts[PY] and not scan.call_stacks and sweep.ranges.stats:  # no lines: the ranges name the time
        extra["ranges"] = sweep.ranges.block()
    if scan.shapes:
        extra["operator_shapes"] = sweep.tables.shapes.block(SHAPE_ROWS)
    add_patterns(raw, extra, header, scan, sweep)  # the pattern rules' facts (pattern_block.py)
    profile = build_profile(raw, extra=extra)
    report = write_outputs(profile, run_dir, on_stage, check=helper.findings)
    return AnalyzedRun(trace=choice.path, profile=profile, report=report, run_dir=run_dir, raw=raw)
