"""``torchtriage analyze PATH``: a trace recorded with torch.profiler elsewhere -> the run folder ``profile`` writes.

PATH is a chrome trace (``export_chrome_trace``; ``.json`` or ``.json.gz``) or a
``tensorboard_trace_handler`` folder.  Exit codes: 0 the report was written;
1 the trace was read but the report failed (profile.json holds what was found);
2 the trace cannot be used (the message says why) or a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .profile import _print_result

EXIT_OK, EXIT_REPORT_FAILED = 0, 1


def register(subparsers: Any) -> None:
    """Add ``analyze`` to the top-level subparsers."""
    parser = subparsers.add_parser(
        "analyze", help="analyse a trace recorded with torch.profiler (a chrome trace, or a tensorboard_trace_handler folder)"
    )
    parser.add_argument("path", type=Path, metavar="PATH", help="trace file (.json, .json.gz, .pt.trace.json) or a folder of them")
    parser.add_argument("--out", type=Path, help="run folder (default: .torchtriage/runs/<time>-analyze-<name>)")
    parser.add_argument(
        "--source-root", type=Path, action="append", default=[], metavar="DIR",
        help="a folder to find the trace's relative file names in (repeatable; then the trace's folder and the current one)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="json: print report.json to stdout")
    parser.add_argument("--quiet", action="store_true", help="no stage messages on stderr")
    parser.set_defaults(handler=run_analyze)


def run_analyze(args: argparse.Namespace) -> int:
    """Analyse the trace, write the run folder, print the summary (or report.json)."""
    from ..runtime.offline.analyze import TraceError, analyze_trace

    def stage(message: str) -> None:
        if not args.quiet and args.format == "text":
            print(f"torchtriage: {message}", file=sys.stderr, flush=True)

    try:
        run = analyze_trace(args.path, out_dir=args.out, on_stage=stage, roots=args.source_root)
    except TraceError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        for warning in run.profile.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if run.report is None:
            print(f"torchtriage: the report failed; see {run.run_dir / 'profile.json'}", file=sys.stderr)
            return EXIT_REPORT_FAILED
        print(json.dumps(run.report, indent=1))
        return EXIT_OK
    _print_result(run.profile, run.report, run.run_dir, args.quiet)
    return EXIT_OK if run.report is not None else EXIT_REPORT_FAILED
