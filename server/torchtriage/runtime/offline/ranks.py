"""A folder of several workers' traces: each worker analysed into a folder of its own, and the run folder's report.

* **Ranks of one job** (``Workers.ranks``: two or more ranks from
  ``distributedInfo`` or the file names): each rank's report in ``rank<N>/``, as
  ``torchtriage profile --nproc-per-node`` writes them, and the run folder shows
  the lowest rank's report with the ``ranks`` section that run gets
  (``distributed/section.py``, launcher ``trace``): per rank the step and busy
  time, the wait in collectives against the time a collective was in flight,
  the stragglers by the same rule, and stragglers leading the verdict.  What a
  trace cannot tell (DDP's settings, the node) stays empty.
* **Separate runs** (several workers, no rank metadata): each worker's report in
  a folder named after it, the run folder showing the first, with a warning.

A trace that cannot be used is left out with a warning, as long as one can be.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, TypeVar

from ..distributed.finish import write_ranks
from ..distributed.section import RankResult, ranks_section
from ..profiling.finish import new_run_dir, write_outputs
from ..results.profile_data import ProfileData
from .reader import TraceError
from .workers import Worker, Workers


class Analyzed(Protocol):
    """What ``analyze.AnalyzedRun`` holds of one analysed trace (a frozen dataclass)."""

    @property
    def trace(self) -> Path: ...
    @property
    def profile(self) -> ProfileData: ...
    @property
    def report(self) -> Optional[dict[str, Any]]: ...
    @property
    def run_dir(self) -> Path: ...
    @property
    def raw(self) -> dict[str, Any]: ...


Run = TypeVar("Run", bound=Analyzed)


def worker_folder(worker: Worker, ranked: bool) -> str:
    """The subfolder a worker's report goes to: ``rank<N>``, else the worker's name made safe for a folder."""
    if ranked:
        return f"rank{worker.rank}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", worker.name).strip(".") or "trace"


def analyze_workers(found: Workers, out_dir: Optional[Path], stage: Callable[[str], None],
                    analyze_one: Callable[[Path, Path], Run]) -> Run:
    """Analyse every worker of ``found`` (``analyze_one(trace, its run folder)``) and write the run folder (see
    the module doc); the shown worker's run, with the combined profile, report and folder, and every worker's run."""
    ranks = found.ranks
    workers = ranks or found.workers
    top = Path(out_dir).resolve() if out_dir is not None else new_run_dir(_run_name(found, bool(ranks)))
    runs: list[tuple[Worker, Run]] = []
    failed = []
    for worker in workers:
        stage(f"rank {worker.rank} of {len(workers)}" if ranks else f"worker {worker.name}")
        try:
            runs.append((worker, analyze_one(worker.path, top / worker_folder(worker, bool(ranks)))))
        except TraceError as exc:
            failed.append(f"{worker_folder(worker, bool(ranks))} was not analysed: {exc}")
    if not runs:
        raise TraceError(f"{found.folder}: none of its {len(workers)} traces can be used ({failed[0]})")
    shown_worker, shown = runs[0]
    others = [{"path": str(w.path.resolve()), "rank": w.rank} for w, _ in runs[1:]]
    source = dict(shown.profile.extra.get("source") or {}, other_traces=others)
    folders = "" if ranks else "; each trace's report is in its own folder: " + ", ".join(r.run_dir.name + "/" for _, r in runs)
    warnings = [w + folders if "analysed as a separate run" in w else w for w in found.warnings()] + failed
    profile = dataclasses.replace(shown.profile, extra=dict(shown.profile.extra, run_dir=str(top), source=source),
                                  warnings=warnings + list(shown.profile.warnings))
    stage("writing the combined report" if ranks else f"writing the report of {shown_worker.name}")
    report = write_outputs(profile, top)
    if ranks and report is not None:
        results = [_rank_result(w, run) for w, run in runs]
        world = {"world_size": found.world_size, "nnodes": None, "node_rank": None,
                 "backend": next((w.backend for w in ranks if w.backend), None)}
        try:
            write_ranks(report, ranks_section(results, results[0], top, world, None, launcher="trace"), top)
        except Exception as exc:  # a bug in the combined section must not lose the ranks' own reports
            profile.warnings.append(f"the ranks section failed: {type(exc).__name__}: {exc}")
            profile.save(top / "profile.json")
            report.pop("ranks", None)
    return dataclasses.replace(shown, profile=profile, report=report, run_dir=top, workers=[r for _, r in runs])


def _rank_result(worker: Worker, run: Analyzed) -> RankResult:
    identity: dict[str, Any] = {"rank": worker.rank, "world_size": worker.world_size, "host": worker.host, "pid": worker.pid}
    return RankResult(worker.rank or 0, run.run_dir, identity, run.raw, run.profile, run.report, run.profile.status,
                      trace=run.trace.resolve())


def _run_name(found: Workers, ranked: bool) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", found.folder.resolve().name) or "traces"
    return f"analyze-{name}" + ("-ranks" if ranked else "")
