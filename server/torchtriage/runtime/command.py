"""``torchtriage profile script.py [-- args]``: run, attribute, diagnose, report.

Exit codes: 0 the window was recorded; 1 the script failed (raised, exited
early, never stepped, timed out, was killed) and whatever was recorded was
written; 2 usage error or the script could not run at all (missing file or
interpreter, syntax error, no torch).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import shutil
import sys
from pathlib import Path
from typing import Any, Optional

from .attribution import build_profile
from .model import ProfileData, RunStatus
from .runner import EXIT_NO_TORCH, RunOptions, RunOutcome, run_agent

EXIT_OK, EXIT_SCRIPT_FAILED, EXIT_CANNOT_RUN = 0, 1, 2
OK_STATUSES = ("completed", "stopped_after_window")
CANNOT_RUN = ("syntax_error", "no_torch")
HOT_FILES = 10


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("profile", help="run a training script under the profiler and map time to source lines")
    parser.add_argument("script", type=Path, help="the training script, run unmodified (options go before it)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script (after --)")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs the script (default: this one)")
    parser.add_argument("--out", type=Path, help="run folder (default: .torchtriage/runs/<time>-<script>)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--skip-first", type=int, default=1, help="steps ignored before waiting (default 1)")
    parser.add_argument("--wait", type=int, default=1, help="steps run without the profiler (default 1)")
    parser.add_argument("--warmup", type=int, default=2, help="profiled steps thrown away (default 2)")
    parser.add_argument("--active", type=int, default=5, help="steps recorded (default 5)")
    parser.add_argument("--full", action="store_true", help="let the script finish after the window")
    parser.add_argument("--timeout", type=float, help="stop the whole run after this many seconds")
    parser.add_argument("--no-step-timeout", type=float, default=120.0, help="give up if no step is seen in this many seconds")
    parser.add_argument("--sample-interval-ms", type=float, default=1.0, help="frame sampling period during recorded steps")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no script output")
    parser.add_argument(
        "--progress", choices=("bar", "json"), default="bar",
        help="bar: a progress bar on stderr; json: one JSON object per line on stdout "
        '({"event": "progress", "message": ..., "percentage": ...}), for editors',
    )
    parser.set_defaults(handler=run_profile)


def _run_dir(args: argparse.Namespace) -> Path:
    if args.out:
        return args.out.resolve()
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(".torchtriage") / "runs" / f"{stamp}-{args.script.stem}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path.resolve()


def _usage(message: str) -> int:
    from ..cli import UsageError

    raise UsageError(message)


def run_profile(args: argparse.Namespace) -> int:
    script_args = list(args.script_args)
    if script_args[:1] == ["--"]:
        script_args = script_args[1:]
    if not args.script.is_file():
        return _usage(f"no such script: {args.script}")
    python = shutil.which(args.python) or (args.python if Path(args.python).is_file() else None)
    if python is None:
        return _usage(f"interpreter not found: {args.python} (set --python to a Python with torch installed)")
    if min(args.active, 1) < 1 or min(args.skip_first, args.wait, args.warmup) < 0:
        return _usage("--active must be at least 1 and --skip-first/--wait/--warmup at least 0")
    run_dir = _run_dir(args)
    options = RunOptions(
        script=args.script.resolve(), args=script_args, out_dir=run_dir, python=python, run_name=run_dir.name,
        skip_first=args.skip_first, wait=args.wait, warmup=args.warmup, active=args.active, device=args.device,
        full=args.full, timeout_s=args.timeout, no_step_timeout_s=args.no_step_timeout, sample_interval_ms=args.sample_interval_ms,
    )
    from .progress import ProgressDisplay

    with ProgressDisplay(args.active, enabled=not args.quiet, json_lines=args.progress == "json") as display:
        outcome = run_agent(options, on_event=display.handle, on_output=display.output)
        display.describe("writing the report")
        profile = profile_from_outcome(outcome, options)
        report = write_outputs(profile, run_dir)
    _print_result(profile, report, run_dir, args.quiet)
    status = profile.status.status
    if status in CANNOT_RUN or (outcome.agent is None and not outcome.reason):
        return EXIT_CANNOT_RUN
    return EXIT_OK if status in OK_STATUSES and profile.steps else EXIT_SCRIPT_FAILED


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
    status = run_status(outcome)
    raw = dict(outcome.agent or {})
    raw.setdefault("meta", {})
    raw["meta"].setdefault("script", str(options.script))
    raw["meta"].setdefault("argv", [str(options.script), *options.args])
    raw["meta"].setdefault("cwd", str(Path.cwd()))
    extra: dict[str, Any] = {"run_dir": str(options.out_dir), "output_log": str(outcome.log_path) if outcome.log_path else None}
    trace = options.out_dir / "trace.json"
    if trace.exists():
        extra["trace"] = str(trace)
        extra["tensorboard_logdir"] = str(options.out_dir / "tb")
    return build_profile(raw, status=status, extra=extra)


def static_findings(profile: ProfileData) -> list[Any]:
    """Static findings for the script and the user files among the hot lines."""
    try:
        from ..analysis import analyze_source
    except ImportError:
        return []
    files = [profile.script] + [line.path for line in profile.lines]
    findings: list[Any] = []
    for path in list(dict.fromkeys(p for p in files if p))[:HOT_FILES]:
        try:
            findings += analyze_source(Path(path).read_text(encoding="utf-8"), path)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
    return findings


def write_outputs(profile: ProfileData, run_dir: Path) -> Optional[dict[str, Any]]:
    """profile.json, then report.json/report.html when the report module is present."""
    run_dir.mkdir(parents=True, exist_ok=True)
    profile.save(run_dir / "profile.json")
    try:
        report_module = importlib.import_module("torchtriage.runtime.report")
    except ImportError:
        return None
    try:
        paths = report_module.write_reports(profile, run_dir, static_findings(profile))
        return report_module.load_report(paths.json)
    except Exception as exc:  # a report bug must not lose the profile
        profile.warnings.append(f"report failed: {type(exc).__name__}: {exc}")
        profile.save(run_dir / "profile.json")
        return None


def _print_result(profile: ProfileData, report: Optional[dict[str, Any]], run_dir: Path, quiet: bool) -> None:
    from rich.console import Console

    console = Console(stderr=False, soft_wrap=True)
    status = profile.status
    if status.status not in OK_STATUSES:
        err = Console(stderr=True)
        err.print(f"[bold red]torchtriage:[/] {status.status}: {status.message}", highlight=False)
        if status.traceback:
            err.print(status.traceback.rstrip(), markup=False, highlight=False)
    for warning in profile.warnings:
        Console(stderr=True).print(f"[yellow]warning:[/] {warning}", highlight=False)
    if report is not None and profile.steps:
        try:
            from .summary import render_summary

            console.print(render_summary(report, run_dir))
            return
        except Exception:
            _fallback_summary(console, profile)
    elif profile.steps:
        _fallback_summary(console, profile)
    console.print(f"Run folder: {run_dir}", highlight=False, markup=False)


def _fallback_summary(console: Any, profile: ProfileData) -> None:
    from rich.table import Table

    table = Table(title=f"{profile.steps_profiled} steps, {profile.mean_step_us / 1000:.2f} ms mean", title_justify="left")
    for column in ("line", "category", "self ms/step", "ops"):
        table.add_column(column)
    n = max(1, profile.steps_profiled)
    for cost in profile.lines[:8]:
        table.add_row(f"{Path(cost.path).name}:{cost.line}", cost.category, f"{cost.self_us / n / 1000:.2f}", ", ".join(cost.top_names[:3]))
    console.print(table)
