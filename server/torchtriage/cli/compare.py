"""``torchtriage compare RUN_A RUN_B`` / ``torchtriage compare RUN --baseline last``.

Compares two profile runs of a script (before and after a change): prints the
table, writes compare.json into the newer run's folder (RUN_B, or RUN with
``--baseline last``) and adds a "Compared with" section to its report.html.
Exit codes: 0 compared; 2 a run cannot be compared (the message says why).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import UsageError


def register(subparsers: Any) -> None:
    """Add ``compare`` to the top-level subparsers."""
    parser = subparsers.add_parser(
        "compare", help="compare two profile runs of a script: step time, shares, hot lines across edits, a verdict"
    )
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run folders (or their report.json): before, then after")
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

    if args.baseline and len(args.runs) != 1:
        raise UsageError("--baseline last takes one run folder: torchtriage compare RUN --baseline last")
    if not args.baseline and len(args.runs) != 2:
        raise UsageError("give two run folders (before, after), or one with --baseline last")
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
