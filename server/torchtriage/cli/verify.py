"""``torchtriage fix --verify SCRIPT [-- args]``: measure each fix on real runs, keep those that help.

Flags -> ``runtime.verify.verify_fixes`` -> verify.json, printed as a table (or
as JSON with ``--format json``).  ``--apply`` writes the fixes that help into
the script; otherwise they are shown as a diff.  Exit codes: 0 measured (whether
or not a fix helped); 1 the script as it is did not record its steps; 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError

EXIT_OK, EXIT_SCRIPT_FAILED = 0, 1
DEFAULT_ACTIVE = 10  # steps recorded per run: the same window for every version


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``fix``'s options for ``--verify`` (``--format`` and ``--device`` are shared with ``check``)."""
    group = parser.add_argument_group(
        "--verify", "fix --verify SCRIPT [-- ARGS]: profile the script and each fixed version, same seed and steps, "
        "and keep the fixes that make the step measurably faster",
    )
    group.add_argument("--verify", action="store_true", help="measure each fix on runs of the script instead of applying them all")
    group.add_argument("--apply", action="store_true",
                       help="with --verify: write the fixes that help into the script (default: print a diff)")
    group.add_argument("--repeat", type=int, default=3, help="with --verify: runs of each version, interleaved (default 3)")
    group.add_argument("--active", type=int, default=DEFAULT_ACTIVE,
                       help=f"with --verify: steps recorded per run (default {DEFAULT_ACTIVE})")
    group.add_argument("--seed", type=int, default=0, help="with --verify: the seed of Python, NumPy and torch in every run (default 0)")
    group.add_argument("--out", type=Path,
                       help="with --verify: the folder for the runs and verify.json (default .torchtriage/runs/verify-...)")
    group.add_argument("--python", default=sys.executable, help="with --verify: the interpreter that runs the script")
    group.add_argument("--timeout", type=float, help="with --verify: stop any one run after this many seconds")
    group.add_argument("--quiet", action="store_true", help="with --verify: no progress display")
    group.add_argument("--progress", choices=("bar", "json"), default="bar", help="with --verify: json: one JSON object per line on stdout")


def run_verify(args: argparse.Namespace) -> int:
    """Measure, write verify.json, print it; apply when asked."""
    from ..runtime.profiling.finish import new_run_dir
    from ..runtime.profiling.progress import ProgressDisplay
    from ..runtime.profiling.runner import RunOptions, RunOutcome, run_agent
    from ..runtime.verify import verify_document, verify_fixes, write_verification
    from .script_target import script_args_and_python

    if not args.paths or args.paths == [Path(".")]:
        raise UsageError("fix --verify takes a script: torchtriage fix --verify train.py [-- ARGS]")
    if args.repeat < 1 or args.active < 1:
        raise UsageError("--repeat and --active must be at least 1")
    script = args.paths[0]
    namespace = argparse.Namespace(script=script, python=args.python, script_args=[str(p) for p in args.paths[1:]])
    script_args, python = script_args_and_python(namespace)
    if script.suffix != ".py":
        raise UsageError(f"fix --verify runs a Python script, not {script}")
    out = args.out.resolve() if args.out else new_run_dir(script.stem, prefix="verify-")
    device = args.device if args.device in ("cpu", "cuda") else "auto"
    base = RunOptions(script=script.resolve(), args=script_args, out_dir=out, python=python, active=args.active,
                      device=device, timeout_s=args.timeout)
    with ProgressDisplay(None, enabled=not args.quiet, json_lines=args.progress == "json") as display:

        def run_one(staged: RunOptions, number: int) -> RunOutcome:
            display.restart(f"{staged.run_name}, run {number} of {args.repeat}: starting the script")
            return run_agent(staged, on_event=display.handle, on_output=display.output)

        try:
            result = verify_fixes(base, args.repeat, run_one, seed=args.seed, on_stage=display.stage)
        except UnicodeDecodeError:
            raise UsageError(f"{script} is not UTF-8 text") from None
        except OSError as exc:  # the fixed versions are written beside the script
            raise UsageError(f"cannot write the fixed versions beside {script}: {exc}") from None
    applied = changed = False
    if args.apply and result.kept_text is not None:
        changed = script.read_bytes().decode("utf-8", errors="replace") != result.original
        if not changed:
            script.write_bytes(result.kept_text.encode("utf-8"))
            applied = True
    document = verify_document(result, applied, [str(script), *script_args])
    if changed:
        document["warnings"].append(f"{script} changed while the fixes were measured: nothing was written (the diff is here)")
    written = write_verification(document, out)
    _print(document, written, args)
    if changed:
        raise UsageError(f"{script} changed while the fixes were measured: nothing written ({written} has the diff)")
    return EXIT_OK if document["baseline"]["step_time_ms"] is not None else EXIT_SCRIPT_FAILED


def _print(document: dict[str, Any], written: Path, args: argparse.Namespace) -> None:
    """The document as JSON or as text; with ``--progress json`` stdout carries JSON lines only, so the
    last one names verify.json (editors read the document from there)."""
    if args.progress == "json":
        print(json.dumps({"event": "verified", "verify_json": str(written), "kept": document["kept"]}), flush=True)
        return
    if getattr(args, "output_format", "text") == "json":
        print(json.dumps(document, indent=1))
        return
    from rich.console import Console

    from ..runtime.verify.text import render_verification

    console = Console(soft_wrap=False)
    console.print(render_verification(document), highlight=False)
    console.print(f"verify.json: {written}", highlight=False, markup=False, soft_wrap=True)
