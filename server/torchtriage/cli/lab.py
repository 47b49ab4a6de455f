"""``torchtriage lab script.py [-- args]``: fp32, bf16 autocast and bf16 + torch.compile, measured.

Exit codes: 0 every configuration that ran was measured (skipped ones do not
count); 1 at least one failed (its row says why; the others still have their
numbers); 2 usage error or the script could not run at all; 130 interrupted
(Ctrl-C: the run in progress is stopped, nothing more runs, lab.json says so).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .script_target import script_args_and_python

EXIT_OK, EXIT_SOME_FAILED, EXIT_CANNOT_RUN = 0, 1, 2
EXIT_INTERRUPTED = 130
CANNOT_RUN = ("syntax_error", "no_torch")


def register(subparsers: Any) -> None:
    """Add ``lab`` to the top-level subparsers."""
    parser = subparsers.add_parser(
        "lab", help="run a training script as fp32, bf16 autocast and bf16 + torch.compile on the same seed and steps, and compare",
    )
    parser.add_argument("script", type=Path, help="the training script, run unmodified (options go before it)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script (after --)")
    parser.add_argument(
        "--modes", default="fp32,bf16,bf16+compile",
        help="comma-separated configurations: fp32, bf16, fp16 (autocast + GradScaler), each optionally +compile, "
        "+reduce-overhead or +max-autotune (compile, reduce-overhead, max-autotune alone mean bf16+...); fp32 always runs "
        "(default: fp32,bf16,bf16+compile)",
    )
    parser.add_argument("--steps", type=int, default=30, help="measured steps per run (default 30)")
    parser.add_argument("--warmup", type=int, default=5, help="steps before the clock starts; compilation happens here (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed set before the script runs, the same for every run (default 0)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration, interleaved; their spread counts as noise (default 1)")
    parser.add_argument("--timeout", type=float, help="stop a run after this many seconds (its row says so)")
    parser.add_argument("--no-step-timeout", type=float, default=300.0, help="give up on an eager run that shows no step in this many seconds (default 300; compiled runs have no such limit: use --timeout)")
    parser.add_argument("--loss-tolerance", type=float, default=0.05, help="relative difference from fp32's final loss still called ok (default 0.05)")
    parser.add_argument("--run-skipped", action="store_true", help="run the modes a CPU skips (fp16, reduce-overhead) anyway")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs the script (default: this one)")
    parser.add_argument("--out", type=Path, help="lab folder (default: .torchtriage/runs/lab-<time>-<script>)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--progress", choices=("bar", "json"), default="bar",
        help='bar: a progress bar on stderr; json: {"event": "progress", "message": ..., "percentage": ...} lines on stdout, for editors',
    )
    parser.set_defaults(handler=run_lab_command)


def run_lab_command(args: argparse.Namespace) -> int:
    """Run every configuration, write lab.json and lab.html, print the table and the reading."""
    script_args, python = script_args_and_python(args)
    from ..runtime.lab import LabSettings, run_and_report
    from ..runtime.lab.plan import parse_modes
    from ..runtime.lab.progress import LabProgress
    from ..runtime.profiling.finish import new_run_dir

    try:
        configurations = parse_modes(args.modes)
        settings = LabSettings(
            steps=args.steps, warmup=args.warmup, seed=args.seed, repeat=args.repeat, timeout_s=args.timeout,
            no_step_timeout_s=args.no_step_timeout, loss_tolerance=args.loss_tolerance, run_skipped=args.run_skipped,
        )
        settings.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    lab_dir = args.out.resolve() if args.out else new_run_dir(args.script.stem, prefix="lab-")
    signal.signal(signal.SIGTERM, _interrupt)  # `timeout`, a killed editor task: stop the run in progress like Ctrl-C
    with LabProgress(settings.steps, settings.warmup, enabled=not args.quiet, json_lines=args.progress == "json") as progress:
        document, paths = run_and_report(
            args.script.resolve(), script_args, python, lab_dir, configurations, settings, on_start=progress.start, on_event=progress.handle,
        )
    _print(document, lab_dir)
    rows = document["rows"]
    if rows[0]["reason"] in CANNOT_RUN:  # the baseline never started: nothing else ran either
        return EXIT_CANNOT_RUN
    if any(r["reason"] == "interrupted" for r in rows):
        return EXIT_INTERRUPTED
    return EXIT_SOME_FAILED if any(r["status"] == "failed" for r in rows) else EXIT_OK


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _print(document: dict[str, Any], lab_dir: Path) -> None:
    from rich.console import Console

    from ..runtime.lab.summary import render_lab_summary

    Console(soft_wrap=True).print(render_lab_summary(document, lab_dir))
