"""``torchtriage compare RUN_A RUN_B`` / ``torchtriage compare RUN --baseline last`` /
``torchtriage compare --profile BEFORE.py AFTER.py [--repeat N]``.

Compares two profile runs of a script (before and after a change): prints the
table, writes compare.json into the newer run's folder (RUN_B, or RUN with
``--baseline last``) and adds a "Compared with" section to its report.html.
``--profile`` makes the two runs first, interleaved (before, after, before,
after ...; ``--repeat`` runs each, 3 by default), into ``OUT/before`` and
``OUT/after``, so run-to-run noise and drift weigh on both sides alike.
A RUN that is a trace recorded with torch.profiler (a ``.json[.gz]`` file, or a
``tensorboard_trace_handler`` folder) rather than a run folder is analysed first,
as ``torchtriage analyze`` does, into ``OUT/before`` or ``OUT/after``.
Exit codes: 0 compared; 1 a profiled script failed; 2 a run cannot be compared (the message says why).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .analyze import add_source_options, path_maps
from .script_target import add_user_root_option


def register(subparsers: Any) -> None:
    """Add ``compare`` to the top-level subparsers."""
    parser = subparsers.add_parser(
        "compare", help="compare two profile runs of a script: step time, shares, hot lines across edits, a verdict"
    )
    parser.add_argument("runs", nargs="*", type=Path, metavar="RUN",
                        help="run folders (or their report.json), or torch.profiler traces (a file or a logdir): before, then after")
    parser.add_argument(
        "--profile", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
        help="profile the two scripts first, interleaved (before, after, before, after ...), then compare them",
    )
    parser.add_argument("--repeat", type=int, default=3, help="with --profile: runs of each script (default 3)")
    parser.add_argument("--out", type=Path,
                        help="with --profile or traces: the folder for before/ and after/ (default .torchtriage/runs/compare-...)")
    parser.add_argument("--python", help="with --profile: the interpreter that runs the scripts (default: this one)")
    parser.add_argument("--quiet", action="store_true", help="with --profile: no progress display")
    add_user_root_option(parser, "with --profile: ")
    add_source_options(parser, "with traces: ")
    parser.add_argument(
        "--baseline", choices=("last",),
        help="last: compare RUN with the previous successful run of the same script in the same runs folder",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="json: print compare.json to stdout")
    parser.add_argument("--no-write", action="store_true", help="print only: leave compare.json and report.html as they are")
    parser.set_defaults(handler=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    """Load both runs, compare, write, print."""
    from ..runtime.compare import CompareError, compare_runs, load_run, previous_run, write_comparison

    if args.profile:
        if args.runs or args.baseline:
            raise UsageError("--profile BEFORE AFTER takes no run folders and no --baseline")
        before, after = _profile_both(args)
        if after is None:
            return 1
        args.runs = [before, after]
    if args.baseline and len(args.runs) != 1:
        raise UsageError("--baseline last takes one run folder: torchtriage compare RUN --baseline last")
    if not args.baseline and len(args.runs) != 2:
        raise UsageError("give two run folders (before, after), or one with --baseline last")
    args.runs = _analyze_traces(args)
    try:
        if args.baseline:
            after = load_run(args.runs[0])
            before = previous_run(after)
        else:
            before, after = load_run(args.runs[0]), load_run(args.runs[1])
        document = compare_runs(before, after)
        written = None if args.no_write else write_comparison(document, after)
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        print(json.dumps(document, indent=1))
        return 0
    from rich.console import Console

    from ..runtime.compare.text import render_comparison, written_lines

    console = Console(soft_wrap=False)
    console.print(render_comparison(document), highlight=False)
    for line in written_lines(written) if written is not None else []:
        console.print(line, soft_wrap=True, highlight=False)
    return 0


def _analyze_traces(args: argparse.Namespace) -> list[Path]:
    """The RUN arguments with each trace (file or logdir) replaced by the run folder it is analysed into."""
    from ..runtime.offline.analyze import TraceError, analyze_trace
    from ..runtime.offline.workers import is_trace_input
    from ..runtime.profiling.finish import new_run_dir

    traces = [is_trace_input(path) for path in args.runs]
    if not any(traces):
        return list(args.runs)
    if args.baseline:
        raise UsageError(f"--baseline last takes a run folder, not a trace ({args.runs[0]}): analyse both traces, "
                         "torchtriage compare BEFORE_TRACE AFTER_TRACE")
    folder = args.out.resolve() if args.out else new_run_dir(args.runs[-1].name.split(".")[0] or "traces", prefix="compare-")
    runs = []
    for path, trace, side in zip(args.runs, traces, ("before", "after")):
        if not trace:
            runs.append(path)
            continue
        if not args.quiet and args.format == "text":
            print(f"torchtriage: analysing the {side} trace {path} into {folder / side}", file=sys.stderr, flush=True)
        try:
            run = analyze_trace(path, out_dir=folder / side, roots=args.source_root, path_map=path_maps(args))
        except TraceError as exc:
            raise UsageError(f"the {side} trace: {exc}") from None
        if run.report is None:
            raise UsageError(f"the {side} trace was read but its report failed; see {run.run_dir / 'profile.json'}")
        runs.append(run.run_dir)
    return runs


def _profile_both(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """``--profile``: both scripts' repeat series, interleaved; the two run folders (after None when its
    script never ran or failed: the failure is printed)."""
    from rich.console import Console

    from ..runtime.profiling.finish import new_run_dir
    from ..runtime.profiling.progress import ProgressDisplay
    from ..runtime.profiling.repeats import profile_interleaved
    from ..runtime.profiling.runner import RunOptions, RunOutcome, run_agent
    from .script_target import script_args_and_python, user_root_folders

    if args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    scripts = []
    for script in args.profile:
        if not script.is_file():
            raise UsageError(f"no such script: {script}")
        scripts.append(script.resolve())
    _, python = script_args_and_python(argparse.Namespace(script=scripts[0], python=args.python or sys.executable, script_args=[]))
    folder = args.out.resolve() if args.out else new_run_dir(scripts[1].stem, prefix="compare-")
    roots = user_root_folders(args)
    sides = [RunOptions(script=script, args=[], out_dir=folder / name, python=python, run_name=name, user_roots=roots)
             for script, name in zip(scripts, ("before", "after"))]
    with ProgressDisplay(None, enabled=not args.quiet) as display:

        def run_one(staged: RunOptions, number: int) -> RunOutcome:
            side = "before" if staged.out_dir.name.startswith(".before") else "after"
            display.restart(f"{side}, run {number} of {args.repeat}: starting the script")
            return run_agent(staged, on_event=display.handle, on_output=display.output)

        first, second = profile_interleaved(sides[0], sides[1], args.repeat, run_one, on_stage=display.stage)
    console = Console(stderr=True)
    for run, options in ((first, sides[0]), (second, sides[1])):
        if run is not None and not run.recorded:
            status = run.profile.status
            console.print(f"{options.script}: {status.status}: {status.message}", highlight=False, markup=False)
            return folder / "before", None
    return folder / "before", (folder / "after") if second is not None else None
