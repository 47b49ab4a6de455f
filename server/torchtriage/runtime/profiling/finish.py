"""After the child has run: status, ProfileData, and the run folder's outputs.

Host-free orchestration shared by every host (CLI, language server, Jupyter):
``finish_run(outcome, options)`` turns what the runner saw into a
``ProfiledRun`` (status, attributed profile, report.json payload) and writes
profile.json, report.json and report.html.  Hosts decide how to show it.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ...findings import INTERNAL_ERROR_CODE, SYNTAX_ERROR_CODE, Finding
from ..agent.wire import EXIT_NO_TORCH
from ..attribution.lines import build_profile
from ..results.profile_data import CANNOT_RUN_STATUSES, OK_STATUSES, ProfileData, RunStatus
from ..report.writer import write_reports
from .hot_findings import HOT_FILES, static_findings  # noqa: F401  (the hosts import them from here)
from .runner import RunOptions, RunOutcome

RUNS_DIR = Path(".torchtriage") / "runs"  # where runs go when no folder is named (relative to the cwd)


def new_run_dir(name: str, prefix: str = "") -> Path:
    """A run folder not yet taken, ``.torchtriage/runs/<prefix><time>-<name>`` (then ``-2``, ``-3``...), absolute; not created.

    ``prefix`` tells kinds of folders apart (the lab's are ``lab-``; profile runs have none)."""
    base = RUNS_DIR / f"{prefix}{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}-{name}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path.resolve()


@dataclass(frozen=True)
class ProfiledRun:
    """One finished run: what the runner saw, the attributed profile, and report.json (None if it failed)."""

    outcome: RunOutcome
    profile: ProfileData
    report: Optional[dict[str, Any]]

    @property
    def recorded(self) -> bool:
        """The window was recorded and the run ended as planned."""
        return self.profile.status.status in OK_STATUSES and bool(self.profile.steps)

    @property
    def could_not_run(self) -> bool:
        """The script never started (syntax error, no torch, no interpreter)."""
        outcome = self.outcome
        return self.profile.status.status in CANNOT_RUN_STATUSES or (outcome.agent is None and not outcome.reason)


def run_status(outcome: RunOutcome) -> RunStatus:
    """The run's status: the runner's reason when it stopped the child, else the agent's."""
    agent = (outcome.agent or {}).get("status") or {}
    status = RunStatus(**{k: agent[k] for k in ("status", "message", "traceback", "exit_code") if k in agent}) if agent else None
    if outcome.reason:
        return RunStatus(status=outcome.reason, message=outcome.message, traceback=status.traceback if status else "", exit_code=outcome.returncode)
    if status is not None:
        return status
    code = outcome.returncode
    if code == EXIT_NO_TORCH:
        return RunStatus(status="no_torch", message="the interpreter cannot import torch", exit_code=code)
    if code is not None and code < 0:
        return RunStatus(status="killed", message=f"the script was killed by signal {-code}", exit_code=code)
    return RunStatus(status="raised", message=f"the profiling agent ended with exit code {code} before writing results", exit_code=code)


def profile_from_outcome(outcome: RunOutcome, options: RunOptions) -> ProfileData:
    """Attribute what the agent recorded (possibly nothing) to source lines."""
    status = run_status(outcome)
    raw = dict(outcome.agent or {})
    raw.setdefault("meta", {})
    raw["meta"].setdefault("script", str(options.script))
    raw["meta"].setdefault("argv", [str(options.script), *options.args])
    raw["meta"].setdefault("cwd", str(Path.cwd()))
    extra: dict[str, Any] = {"run_dir": str(options.out_dir), "output_log": str(outcome.log_path) if outcome.log_path else None}
    for name in ("trace.json.gz", "trace.json"):  # trace.json: runs written before the trace was compressed
        trace = options.out_dir / name
        if trace.exists():
            extra["trace"] = str(trace)
            extra["tensorboard_logdir"] = str(options.out_dir / "tb")
            break
    snapshot = memory_snapshot(raw["meta"], options.out_dir)
    if snapshot is not None:
        extra["memory_snapshot"] = str(snapshot)
    return build_profile(raw, status=status, extra=extra)


def memory_snapshot(meta: dict[str, Any], run_dir: Path) -> Optional[Path]:
    """The run folder's CUDA memory snapshot (``--memory-snapshot``), when the agent wrote one and it is there.

    agent.json's ``meta.memory_snapshot`` names the file inside the folder the agent wrote to, so a run
    staged elsewhere and moved (``--repeat``) still finds its own."""
    name = meta.get("memory_snapshot")
    if not isinstance(name, str) or not name:
        return None
    path = run_dir / Path(name).name
    return path if path.is_file() else None


def cell_static_findings(cells: Sequence[str], numbers: Sequence[int], cwd: Path) -> list[Finding]:
    """Static findings for a kernel's cells analysed as one notebook (one virtual module, as the editor
    and ``%torchtriage_check`` see them), with the ``[tool.torchtriage]`` settings of the nearest
    pyproject.toml above ``cwd``.  Spans are cell-local and ``finding.cell.cell`` is the cell's number
    (from ``numbers``): the host knows which file each cell is."""
    from ...analysis.notebooks import analyze_cells
    from ...config import load_settings

    if not cells:
        return []
    settings, _ = load_settings(cwd)
    found = analyze_cells(cells, "<kernel>", settings, numbers)
    return [f for f in found if f.code not in (SYNTAX_ERROR_CODE, INTERNAL_ERROR_CODE)]


StageCallback = Callable[[str], None]


def write_outputs(
    profile: ProfileData,
    run_dir: Path,
    on_stage: Optional[StageCallback] = None,
    repeats: Optional[dict[str, Any]] = None,
    findings: Optional[Sequence[Finding]] = None,
    check: Callable[[ProfileData], Sequence[Finding]] = static_findings,
) -> Optional[dict[str, Any]]:
    """profile.json, then report.json and report.html; returns the report (None when the report failed).
    ``repeats``: report.json's ``repeats`` object when the run is one of a ``--repeat`` series.
    ``findings``: the static findings to link, when the host has them (the Jupyter magic: the kernel's
    cells as one notebook); else ``check(profile)``: by default :func:`static_findings` of the script and hot files."""
    stage = on_stage or (lambda _: None)
    run_dir.mkdir(parents=True, exist_ok=True)
    profile.save(run_dir / "profile.json")
    try:
        if findings is None:
            stage("checking the hot files for static findings")
            findings = check(profile)
        stage("writing report.json and report.html")
        return write_reports(profile, run_dir, findings, repeats=repeats).report
    except Exception as exc:  # a report bug must not lose the profile
        profile.warnings.append(f"report failed: {type(exc).__name__}: {exc}")
        profile.save(run_dir / "profile.json")
        return None


def finish_run(outcome: RunOutcome, options: RunOptions, on_stage: Optional[StageCallback] = None) -> ProfiledRun:
    """Attribute, diagnose and write the run folder for one finished child process; ``on_stage``
    hears the name of each stage as it starts."""
    if on_stage is not None:
        on_stage("attributing the recorded time to lines")
    profile = profile_from_outcome(outcome, options)
    return ProfiledRun(outcome, profile, write_outputs(profile, options.out_dir, on_stage))
