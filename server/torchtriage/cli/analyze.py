"""``torchtriage analyze PATH``: a trace recorded with torch.profiler elsewhere -> the run folder ``profile`` writes.

PATH is a chrome trace (``export_chrome_trace``; ``.json`` or ``.json.gz``) or a
``tensorboard_trace_handler`` folder (several ranks: each in ``rank<N>/`` and the
ranks side by side).  Exit codes: 0 the report was written;
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
    parser.add_argument("path", type=Path, metavar="PATH",
                        help="trace file (.json, .json.gz, .pt.trace.json) or a folder of them (one job's ranks: each analysed)")
    parser.add_argument("--out", type=Path, help="run folder (default: .torchtriage/runs/<time>-analyze-<name>)")
    add_source_options(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text", help="json: print report.json to stdout")
    parser.add_argument("--quiet", action="store_true", help="no stage messages on stderr")
    parser.set_defaults(handler=run_analyze)


def add_source_options(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """``--source-root DIR`` and ``--path-map FROM=TO``: where a trace's file names are on this machine."""
    parser.add_argument(
        "--source-root", type=Path, action="append", default=[], metavar="DIR",
        help=prefix + "a folder to find the trace's relative file names in (repeatable; then the trace's folder and the current one)",
    )
    parser.add_argument(
        "--path-map", action="append", default=[], metavar="FROM=TO",
        help=prefix + "the trace's paths starting with FROM are under TO here (repeatable; tried before matching path tails)",
    )


def path_maps(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The ``--path-map FROM=TO`` pairs; a malformed one is a usage error."""
    pairs = []
    for text in args.path_map:
        source, sep, target = text.partition("=")
        if not sep or not source or not target:
            raise UsageError(f"--path-map {text!r}: expected FROM=TO (a path prefix in the trace = the folder it is in here)")
        pairs.append((source, str(Path(target).expanduser().resolve())))
    return pairs


def run_analyze(args: argparse.Namespace) -> int:
    """Analyse the trace, write the run folder, print the summary (or report.json)."""
    from ..runtime.offline.analyze import TraceError, analyze_trace

    def stage(message: str) -> None:
        if not args.quiet and args.format == "text":
            print(f"torchtriage: {message}", file=sys.stderr, flush=True)

    try:
        run = analyze_trace(args.path, out_dir=args.out, on_stage=stage, roots=args.source_root, path_map=path_maps(args))
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
