"""``torchtriage profile script.py [-- args]``: run, attribute, diagnose, report.

Exit codes: 0 the window was recorded; 1 the script failed (raised, exited
early, never stepped, timed out, was killed) and whatever was recorded was
written; 2 usage error or the script could not run at all (missing file or
interpreter, syntax error, no torch).

``--nproc-per-node N`` (with torchrun's rendezvous options) runs the script
under torchrun with the agent in every rank (``runtime/distributed``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..errors import UsageError
from .script_target import add_user_root_option, script_args_and_python, user_root_folders

if TYPE_CHECKING:
    from ..runtime.results.profile_data import ProfileData
    from ..runtime.profiling.finish import ProfiledRun
    from ..runtime.profiling.runner import RunOptions, RunOutcome

EXIT_OK, EXIT_SCRIPT_FAILED, EXIT_CANNOT_RUN = 0, 1, 2


def register(subparsers: Any) -> None:
    """Add ``profile`` to the top-level subparsers."""
    parser = subparsers.add_parser("profile", help="run a training script under the profiler and map time to source lines")
    parser.add_argument("script", type=Path, help="the training script, run unmodified (options go before it)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script (after --)")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs the script (default: this one)")
    parser.add_argument("--out", type=Path, help="run folder (default: .torchtriage/runs/<time>-<script>)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--skip-first", type=int, default=1, help="steps ignored before waiting (default 1)")
    parser.add_argument("--wait", type=int, default=1, help="steps run without the profiler (default 1)")
    parser.add_argument("--warmup", type=int, default=2, help="profiled steps thrown away (default 2)")
    parser.add_argument("--active", type=int, default=None,
                        help="steps recorded (default: until the 95%% interval of the mean step is within 5%% of it, at least "
                             "5 steps and two worker cycles, at most 30 steps or 6 s of recording; with --nproc-per-node, 5)")
    parser.add_argument("--full", action="store_true", help="let the script finish after the window")
    parser.add_argument("--timeout", type=float, help="stop the whole run after this many seconds")
    parser.add_argument("--no-step-timeout", type=float, default=120.0, help="give up if no step is seen in this many seconds")
    parser.add_argument("--sample-interval-ms", type=float, default=1.0, help="frame sampling period during recorded steps")
    parser.add_argument(
        "--max-events", type=int, default=300_000,
        help="profiler events per run (default 300000): heavy steps get fewer recorded steps (at least one), "
        "and steps past the limit are dropped; 0: no limit",
    )
    parser.add_argument(
        "--python-frames", choices=("auto", "on", "off"), default="auto",
        help="record Python frames (exact call lines); auto: unless 5 steps of them (or all of a shorter --active) "
        "would pass --max-events, "
        "when the window is recorded without them and frame samples name the lines (cheaper, and no tracer slowing "
        "the Python it measures)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N",
        help="run the script N times (default 1): report.json keeps every run's step times and their spread, "
        "the run folder the median run's files; `torchtriage compare` calls differences within the spread no change",
    )
    parser.add_argument(
        "--record-shapes", choices=("auto", "on", "off"), default="auto",
        help="record the operand shapes of matmuls and convolutions (Tensor-Core findings); auto: on CUDA runs only",
    )
    parser.add_argument(
        "--memory-snapshot", action="store_true",
        help="CUDA runs: record the caching allocator's history over the recorded window and save it as "
        "memory_snapshot.pickle in the run folder (open it at pytorch.org/memory_viz); on the CPU it only warns",
    )
    add_user_root_option(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no script output")
    parser.add_argument(
        "--progress", choices=("bar", "json"), default="bar",
        help="bar: a progress bar on stderr; json: one JSON object per line on stdout "
        '({"event": "progress", "message": ..., "percentage": ...}), for editors',
    )
    _register_distributed(parser)
    parser.set_defaults(handler=run_profile)


def _register_distributed(parser: Any) -> None:
    """torchrun's launch options; any of them makes the run multi-process."""
    group = parser.add_argument_group("multi-process (torchrun)", "run under torchrun with the agent in every rank")
    group.add_argument("--nproc-per-node", type=int, help="ranks on this node: runs the script under torchrun")
    group.add_argument("--nnodes", default="1", help="nodes taking part (torchrun's --nnodes, M or MIN:MAX; default 1)")
    group.add_argument("--node-rank", type=int, default=0, help="this node's rank, 0..nnodes-1 (default 0)")
    group.add_argument("--master-addr", help="address of node 0 (static rendezvous)")
    group.add_argument("--master-port", type=int, help="a free port on node 0 (static rendezvous)")
    group.add_argument("--rdzv-backend", help="torchrun's rendezvous backend (e.g. c10d), passed through")
    group.add_argument("--rdzv-endpoint", help="HOST:PORT of the rendezvous, passed through")
    group.add_argument("--rdzv-id", help="the job id of the rendezvous, passed through")
    group.add_argument("--rdzv-conf", help="torchrun's --rdzv-conf, passed through")
    group.add_argument("--show-rank", type=int, help="the rank whose report the run folder shows (default: this node's first)")


def run_profile(args: argparse.Namespace) -> int:
    """Run the script under the agent, write the run folder, print the summary."""
    script_args, python = script_args_and_python(args)
    if (args.active is not None and args.active < 1) or min(args.skip_first, args.wait, args.warmup) < 0:
        raise UsageError("--active must be at least 1 and --skip-first/--wait/--warmup at least 0")
    if args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    # The runtime loads only for this command, so `check` starts as fast as before.
    from ..runtime.profiling.finish import finish_run, new_run_dir
    from ..runtime.profiling.progress import ProgressDisplay
    from ..runtime.profiling.runner import RunOptions, run_agent

    dist = _distributed_options(args)
    run_dir = args.out.resolve() if args.out else new_run_dir(args.script.stem)
    options = RunOptions(
        script=args.script.resolve(), args=script_args, out_dir=run_dir, python=python, run_name=run_dir.name,
        skip_first=args.skip_first, wait=args.wait, warmup=args.warmup, active=args.active, device=args.device,
        full=args.full, timeout_s=args.timeout, no_step_timeout_s=args.no_step_timeout, sample_interval_ms=args.sample_interval_ms,
        max_events=args.max_events, record_shapes=args.record_shapes, memory_snapshot=args.memory_snapshot,
        user_roots=user_root_folders(args), python_frames=args.python_frames,
    )
    if dist is not None:
        run: Any = _profile_ranks(options, dist, args)
    elif args.repeat > 1:
        run = _profile_repeated(options, args)
    else:
        with ProgressDisplay(args.active, enabled=not args.quiet, json_lines=args.progress == "json") as display:
            outcome = run_agent(options, on_event=display.handle, on_output=display.output)
            run = finish_run(outcome, options, on_stage=display.stage)
    _print_result(run.profile, run.report, run_dir, args.quiet)
    if run.could_not_run:
        return EXIT_CANNOT_RUN
    return EXIT_OK if run.recorded else EXIT_SCRIPT_FAILED


def _distributed_options(args: argparse.Namespace) -> Any:
    """torchrun's options, checked; None for a single-process run."""
    given = [name for name in ("master_addr", "master_port", "rdzv_backend", "rdzv_endpoint", "rdzv_id", "rdzv_conf", "show_rank")
             if getattr(args, name) is not None] + (["nnodes"] if args.nnodes != "1" else []) + (["node_rank"] if args.node_rank else [])
    if args.nproc_per_node is not None and args.repeat > 1:
        raise UsageError("--repeat does not combine with --nproc-per-node yet: profile the ranks once")
    if args.nproc_per_node is None:
        if given:
            flags = ", ".join("--" + name.replace("_", "-") for name in given)
            raise UsageError(f"{flags} only apply to a multi-process run: add --nproc-per-node N")
        return None
    from ..runtime.distributed.launch import DistOptions, check_options
    from ..runtime.diagnosis.machine import host_physical_cores

    dist = DistOptions(
        nproc_per_node=args.nproc_per_node, nnodes=str(args.nnodes), node_rank=args.node_rank, master_addr=args.master_addr,
        master_port=args.master_port, rdzv_backend=args.rdzv_backend, rdzv_endpoint=args.rdzv_endpoint, rdzv_id=args.rdzv_id,
        rdzv_conf=args.rdzv_conf,
    )
    try:
        check_options(dist, host_physical_cores())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.show_rank is not None and not 0 <= args.show_rank < dist.nproc_per_node * dist.max_nodes:
        raise UsageError(f"--show-rank {args.show_rank} is not a rank of this run (0..{dist.nproc_per_node * dist.max_nodes - 1})")
    return dist


def _profile_repeated(options: "RunOptions", args: argparse.Namespace) -> "ProfiledRun":
    """``--repeat N``: N runs under one progress display (restarted for each); the median run is kept."""
    from ..runtime.profiling.progress import ProgressDisplay
    from ..runtime.profiling.repeats import profile_repeated
    from ..runtime.profiling.runner import run_agent

    with ProgressDisplay(args.active, enabled=not args.quiet, json_lines=args.progress == "json") as display:

        def run_one(staged: "RunOptions", run: int) -> "RunOutcome":
            display.restart(f"run {run} of {args.repeat}: starting the script")
            return run_agent(staged, on_event=display.handle, on_output=display.output)

        return profile_repeated(options, args.repeat, run_one, on_stage=display.stage)


def _profile_ranks(options: "RunOptions", dist: Any, args: argparse.Namespace) -> Any:
    """``--nproc-per-node N``: torchrun with the agent in every rank; the combined run (``DistributedRun``)."""
    from ..runtime.distributed.finish import finish_ranks
    from ..runtime.distributed.launch import TorchrunChild, lead_rank_events
    from ..runtime.profiling.progress import ProgressDisplay
    from ..runtime.profiling.runner import run_agent

    with ProgressDisplay(args.active, enabled=not args.quiet, json_lines=args.progress == "json") as display:
        child = TorchrunChild(options, dist, on_event=lead_rank_events(display.handle), on_output=display.output)
        outcome = run_agent(options, child=child)
        return finish_ranks(outcome, options, dist, on_stage=display.stage, shown_rank=args.show_rank)


def _print_result(profile: "ProfileData", report: Optional[dict[str, Any]], run_dir: Path, quiet: bool) -> None:
    from rich.console import Console
    from rich.markup import escape

    from ..runtime.results.profile_data import OK_STATUSES

    console = Console(stderr=False, soft_wrap=True)
    status = profile.status
    if status.status not in OK_STATUSES:
        err = Console(stderr=True)
        err.print(f"[bold red]torchtriage:[/] {escape(status.status)}: {escape(status.message)}", highlight=False)
        if status.traceback:
            err.print(status.traceback.rstrip(), markup=False, highlight=False)
    for warning in profile.warnings:
        Console(stderr=True).print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    if report is not None and profile.steps:
        try:
            from ..runtime.report.summary import render_summary

            console.print(render_summary(report, run_dir))
            if report.get("ranks"):
                from ..runtime.distributed.summary import render_ranks

                console.print(render_ranks(report))
            return
        except Exception:
            _fallback_summary(console, profile)
    elif profile.steps:
        _fallback_summary(console, profile)
    console.print(f"Run folder: {run_dir}", highlight=False, markup=False)


def _fallback_summary(console: Any, profile: "ProfileData") -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"{profile.steps_profiled} steps, {profile.mean_step_us / 1000:.2f} ms mean", title_justify="left")
    table.add_column("self ms/step", justify="right", no_wrap=True)
    table.add_column("line", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("ops", overflow="ellipsis")
    n = max(1, profile.steps_profiled)
    for cost in profile.lines[:8]:
        table.add_row(f"{cost.self_us / n / 1000:.2f}", Text(f"{Path(cost.path).name}:{cost.line}"), cost.category, Text(", ".join(cost.top_names[:3])))
    console.print(table)
