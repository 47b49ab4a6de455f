"""After torchrun has ended: each rank's own report, the run's status, and the combined report.

Every ``rank<k>/`` folder gets what a single-process run folder gets
(profile.json, report.json, report.html beside the rank's agent.json and
trace).  The run folder itself gets the *shown* rank's report (the lowest rank
of this node unless another is asked for) with the run's combined status and
the ``ranks`` section, so hosts that read ``report.json`` see one report.

The combined status: the runner's reason when it stopped the run (timeout,
interrupt, no step: with no rank started, that is a rendezvous that never
completed); else the first rank that failed by itself (ranks torchrun stopped
because of it are named as such); else torchrun's own failure when no rank
started; else the shown rank's.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..diagnosis.bottleneck import diagnose
from ..report.html import render_html
from ..results.profile_data import CANNOT_RUN_STATUSES, OK_STATUSES, ProfileData, RunStatus
from ..profiling.finish import StageCallback, finish_run, profile_from_outcome, static_findings
from ..report.writer import REPORT_HTML, REPORT_JSON, build_report
from ..profiling.runner import AGENT_JSON, RunOptions, RunOutcome
from .launch import DistOptions, rank_folders
from .section import RankResult, ranks_section

VICTIM_STATUSES = ("killed", "interrupted")
TAIL_LINES = 6


@dataclass(frozen=True)
class DistributedRun:
    """The whole torchrun run: the combined profile and report, and every rank's result."""

    outcome: RunOutcome
    profile: ProfileData  # the shown rank's, carrying the combined status
    report: Optional[dict[str, Any]]
    ranks: list[RankResult]

    @property
    def recorded(self) -> bool:
        return self.profile.status.status in OK_STATUSES and bool(self.profile.steps)

    @property
    def could_not_run(self) -> bool:
        return self.profile.status.status in CANNOT_RUN_STATUSES


def _read_agent(folder: Path) -> Optional[dict[str, Any]]:
    try:
        data = json.loads((folder / AGENT_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _agent_status(raw: Optional[dict[str, Any]]) -> dict[str, Any]:
    return dict((raw or {}).get("status") or {})


def _root_failure(agents: dict[int, Optional[dict[str, Any]]]) -> Optional[int]:
    """The rank that failed first by itself (not one stopped because of another), by when it ended."""
    failed = []
    for rank, raw in agents.items():
        status = _agent_status(raw).get("status")
        if raw is not None and status not in OK_STATUSES and status not in VICTIM_STATUSES:
            failed.append((float((raw.get("meta") or {}).get("ended_at") or 0.0), rank))
    return min(failed)[1] if failed else None


def _rank_agent(rank: int, raw: Optional[dict[str, Any]], outcome: RunOutcome, root: Optional[int]) -> dict[str, Any]:
    """The rank's agent.json as the attribution reads it, with a status that says what happened to it."""
    data = dict(raw or {})
    status = _agent_status(raw)
    if raw is None:
        if root is not None and rank != root:  # torchrun killed it before it could save (under load, or blocked in a collective)
            why = f"stopped by torchrun after rank {root} failed"
        elif outcome.reason:
            why = "it was still running when the run was stopped"
        else:
            why = "killed by a signal, or it crashed in native code"
        status = {"status": "killed", "message": f"rank {rank} ended without writing its results ({why})", "traceback": "", "exit_code": None}
    elif root is not None and rank != root and status.get("status") in VICTIM_STATUSES:
        status["message"] = f"stopped by torchrun after rank {root} failed"
    elif root is not None and rank != root and status.get("status") not in OK_STATUSES:
        status["message"] = f"after rank {root} failed: {status.get('message', '')}"
    data["status"] = status
    return data


def _launch_failure(outcome: RunOutcome, dist: DistOptions, timeout_s: Optional[float]) -> RunStatus:
    """Why no rank started: a rendezvous that never completed, or torchrun's own error."""
    where = f"{dist.master_addr}:{dist.master_port}" if dist.master_addr else (dist.rdzv_endpoint or "the rendezvous endpoint")
    waiting = (
        f"torchrun is still waiting in the rendezvous for --nnodes {dist.nnodes} nodes at {where}; start the other nodes "
        "(same address and port, each with its own --node-rank), or check the address and that the port is free"
    )
    if outcome.reason == "no_steps":
        return RunStatus("no_steps", f"no rank started within {timeout_s:g} s: {waiting} (raise --no-step-timeout if they start later)",
                         exit_code=outcome.returncode)
    if outcome.reason == "timeout" and dist.max_nodes > 1:
        return RunStatus("timeout", f"{outcome.message}; no rank had started: {waiting}", exit_code=outcome.returncode)
    if outcome.reason:
        return RunStatus(outcome.reason, outcome.message, exit_code=outcome.returncode)
    tail = _log_tail(outcome)
    if "No module named torch" in tail or "No module named 'torch'" in tail:
        return RunStatus("no_torch", f"the interpreter cannot import torch, so torchrun cannot start: {tail}", exit_code=outcome.returncode)
    return RunStatus("raised", f"torchrun ended with exit code {outcome.returncode} before any rank started: {tail}",
                     exit_code=outcome.returncode)


def _log_tail(outcome: RunOutcome) -> str:
    try:
        lines = [ln for ln in (outcome.log_path.read_text(encoding="utf-8", errors="replace").splitlines() if outcome.log_path else []) if ln.strip()]
    except OSError:
        lines = []
    return " | ".join(line.strip() for line in lines[-TAIL_LINES:]) or "(no output)"


def combined_status(outcome: RunOutcome, results: list[RankResult], root: Optional[int], shown: Optional[RankResult],
                    dist: DistOptions, timeout_s: Optional[float]) -> RunStatus:
    """The status of the whole run (see the module docstring)."""
    started = any(e.get("event") == "rank" for e in outcome.events) or bool(results)
    if not started:
        return _launch_failure(outcome, dist, timeout_s)
    first = next((r for r in results if r.rank == root), None)
    if outcome.reason:
        return RunStatus(outcome.reason, outcome.message, first.status.traceback if first else "", outcome.returncode)
    if first is not None:
        s = first.status
        return RunStatus(s.status, f"rank {first.rank}: {s.message}", s.traceback, s.exit_code)
    bad = next((r for r in results if r.status.status not in OK_STATUSES), None)
    if bad is not None:
        return RunStatus(bad.status.status, f"rank {bad.rank}: {bad.status.message}", bad.status.traceback, bad.status.exit_code)
    return shown.status if shown is not None else RunStatus("raised", "no rank wrote results", exit_code=outcome.returncode)


def finish_ranks(outcome: RunOutcome, options: RunOptions, dist: DistOptions, on_stage: Optional[StageCallback] = None,
                 shown_rank: Optional[int] = None) -> DistributedRun:
    """Write every rank's folder and the combined report; ``shown_rank``: whose report the run folder shows."""
    stage = on_stage or (lambda _: None)
    run_dir = options.out_dir
    folders = rank_folders(run_dir)
    agents = {rank: _read_agent(folder) for rank, folder in folders.items()}
    root = _root_failure(agents)
    results = []
    for rank, folder in folders.items():
        stage(f"rank {rank}: attributing the recorded time to lines")
        data = _rank_agent(rank, agents[rank], outcome, root)
        rank_outcome = dataclasses.replace(outcome, reason="", message="", agent=data,
                                           events=[e for e in outcome.events if e.get("rank") == rank])
        run = finish_run(rank_outcome, dataclasses.replace(options, out_dir=folder))
        results.append(RankResult(rank, folder, dict((data.get("meta") or {}).get("rank") or {}), data, run.profile, run.report,
                                  run.profile.status))
    shown = next((r for r in results if r.rank == shown_rank), None) if shown_rank is not None else None
    shown = shown or (results[0] if results else None)
    status = combined_status(outcome, results, root, shown, dist, options.no_step_timeout_s)
    stage("writing the combined report")
    if shown is not None:
        base = shown.profile
    else:
        base = profile_from_outcome(outcome, options)
    extra = dict(base.extra, run_dir=str(run_dir), output_log=str(outcome.log_path) if outcome.log_path else None)
    if (run_dir / "tb").is_dir():
        extra["tensorboard_logdir"] = str(run_dir / "tb")
    extra["trace_files"] = [str(r.folder / "trace.json.gz") for r in results if (r.folder / "trace.json.gz").is_file()]
    profile = dataclasses.replace(base, status=status, extra=extra, warnings=list(base.warnings))
    report = _write_combined(profile, results, shown, run_dir, dist, root)
    return DistributedRun(outcome, profile, report, results)


def _straggler_advice(report: dict[str, Any]) -> None:
    """Stragglers lead the verdict's evidence and fixes: the whole job runs at the slowest rank's pace."""
    verdict = report["bottleneck"]
    for straggler in reversed(report["ranks"]["stragglers"]):
        rank, title = straggler["rank"], straggler["category"].replace("_", " ")
        verdict["evidence"].insert(0, {"text": straggler["text"], "path": None, "line": None})
        verdict["recommendations"].insert(0, {
            "action": f"Make rank {rank} as fast as the others: its {title} costs {straggler['category_gap_ms']:.1f} ms/step more",
            "why": (f"Every rank waits for the slowest at each collective, so the job runs at rank {rank}'s pace; "
                    f"rank{rank}/report.html shows its hot lines (uneven data per rank, a slower disk or node, extra work on one rank)."),
            "example": "",
        })


def write_ranks(report: dict[str, Any], section: dict[str, Any], run_dir: Path) -> None:
    """Give a combined report its ``ranks`` section, stragglers leading its verdict, and write report.json and report.html."""
    report["ranks"] = section
    _straggler_advice(report)
    (run_dir / REPORT_JSON).write_text(json.dumps(report, indent=1), encoding="utf-8")
    (run_dir / REPORT_HTML).write_text(render_html(report, run_dir), encoding="utf-8")


def _write_combined(profile: ProfileData, results: list[RankResult], shown: Optional[RankResult], run_dir: Path,
                    dist: DistOptions, root: Optional[int]) -> Optional[dict[str, Any]]:
    run_dir.mkdir(parents=True, exist_ok=True)
    profile.save(run_dir / "profile.json")
    try:
        created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        report = build_report(profile, diagnose(profile, static_findings(profile) if profile.steps else []), run_dir, None, created)
        identity = shown.identity if shown is not None else {}
        world = {"world_size": identity.get("world_size"), "nnodes": dist.nnodes, "node_rank": identity.get("node_rank", dist.node_rank)}
        write_ranks(report, ranks_section(results, shown, run_dir, world, root), run_dir)
        return report
    except Exception as exc:  # a report bug must not lose the ranks' own reports
        profile.warnings.append(f"combined report failed: {type(exc).__name__}: {exc}")
        profile.save(run_dir / "profile.json")
        return None
