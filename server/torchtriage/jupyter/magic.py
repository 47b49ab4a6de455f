"""``%%torchtriage`` (profile a cell in the live kernel) and ``%torchtriage_check`` (lint the cells so far).

Load with ``%load_ext torchtriage``.  The cell runs in the kernel's own
namespace, with its state; ``runtime/agent/inkernel.py`` records it and the
usual host-free pipeline (attribution, diagnosis, report) turns the record
into report.json and report.html in the run folder.  Nothing here analyses:
it translates between IPython and the core.
"""

from __future__ import annotations

import argparse
import json
import linecache
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Optional

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from .cells import KernelCells, remap_paths
from .display import bundle, html_fallback, payload, text_summary

PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # torchtriage/: our frames are overhead, never user code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%%torchtriage", add_help=False, exit_on_error=False, allow_abbrev=False)
    parser.add_argument("--out", type=Path, help="run folder (default: .torchtriage/runs/<time>-cell<N>)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--skip-first", type=int, default=1, help="steps ignored before waiting (default 1)")
    parser.add_argument("--wait", type=int, default=1, help="steps run without the profiler (default 1)")
    parser.add_argument("--warmup", type=int, default=2, help="profiled steps thrown away (default 2)")
    parser.add_argument("--active", "--steps", dest="active", type=int, default=5, help="steps recorded (default 5)")
    parser.add_argument("--full", action="store_true", help="run the cell to its end after the window")
    parser.add_argument("--timeout", type=float, help="interrupt the cell after this many seconds")
    parser.add_argument("--sample-interval-ms", type=float, default=1.0)
    parser.add_argument("--first-line", type=int, default=2,
                        help="the cell line the body starts on (2: after the %%%%torchtriage line; front ends that "
                             "send the magic themselves pass 1)")
    return parser


class UsageProblem(Exception):
    pass


def parse_options(line: str) -> argparse.Namespace:
    try:
        args, rest = _parser().parse_known_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError, SystemExit) as exc:
        raise UsageProblem(str(exc)) from None
    if rest:
        raise UsageProblem(f"unknown options: {' '.join(rest)}")
    if args.active < 1 or min(args.skip_first, args.wait, args.warmup) < 0 or args.first_line < 1:
        raise UsageProblem("--active must be at least 1, --skip-first/--wait/--warmup at least 0, --first-line at least 1")
    return args


@magics_class
class TorchtriageMagics(Magics):
    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.cells = KernelCells(shell)

    @cell_magic("torchtriage")
    def torchtriage(self, line: str, cell: str) -> None:
        """Profile this cell in the kernel: %%torchtriage [--active N] [--skip-first N] [--wait N] [--warmup N]
        [--device auto|cpu|cuda] [--timeout S] [--full] [--out DIR]."""
        try:
            args = parse_options(line)
        except UsageProblem as exc:
            print(f"%%torchtriage: {exc}\n{_parser().format_help()}", file=sys.stderr)
            return
        from IPython.display import display

        data, html, text = self.profile(args, cell)
        display(bundle(data, html, text), raw=True)

    def profile(self, args: argparse.Namespace, cell: str) -> tuple[dict[str, Any], str, str]:
        """Run the cell under the profiler; returns the MIME payload, the HTML and the text."""
        from ..runtime.agent.inkernel import CellProfiler
        from ..runtime.attribution.lines import build_profile
        from ..runtime.results.profile_data import RunStatus
        from ..runtime.profiling.finish import write_outputs
        from ..runtime.profiling.runner import OUTPUT_LOG
        from .native_stderr import NativeStderr
        from ..runtime.profiling.user_roots import in_process_user_roots

        number = self.cells.current()
        run_dir = _run_dir(args.out, number)
        source = "\n" * (args.first_line - 1) + self.shell.transform_cell(cell)
        cell_file = run_dir / f"cell-{number}.py"
        cell_file.write_text(source, encoding="utf-8")
        linecache.checkcache(str(cell_file))
        code = compile(source, str(cell_file), "exec")
        renames = self.cells.materialise(run_dir, number)
        self.cells.profiled[str(cell_file)] = number
        config = {
            "out_dir": str(run_dir), "run_name": run_dir.name, "skip_first": args.skip_first, "wait": args.wait,
            "warmup": args.warmup, "active": args.active, "device": args.device, "full": args.full,
            "timeout_s": args.timeout, "sample_interval_s": args.sample_interval_ms / 1000.0,
            "meta": {"script": str(cell_file), "argv": [f"In [{number}]"], "cwd": os.getcwd()},
        }
        roots = [str(run_dir), *in_process_user_roots(Path.cwd()), *self.cells.roots()]
        import torch

        excluded = [PACKAGE_DIR, str(Path(torch.__file__).resolve().parent)]
        user_ns = self.shell.user_ns
        with NativeStderr(run_dir / OUTPUT_LOG) as native:  # kineto's C++ log lines: output.log, not the cell
            raw = CellProfiler(config, roots, excluded, PACKAGE_DIR).run(lambda: exec(code, user_ns))
        raw = remap_paths(raw, renames)
        (run_dir / "agent.json").write_text(json.dumps(raw), encoding="utf-8")
        status = RunStatus(**{k: raw["status"][k] for k in ("status", "message", "traceback", "exit_code")})
        extra: dict[str, Any] = {"run_dir": str(run_dir), "output_log": str(native.log) if native.written else None}
        if (run_dir / "trace.json").exists():
            extra.update(trace=str(run_dir / "trace.json"), tensorboard_logdir=str(run_dir / "tb"))
        profile = build_profile(raw, status=status, extra=extra)
        report = write_outputs(profile, run_dir, findings=self._static_findings(profile, number, renames)) if profile.steps else None
        if report is None:
            profile.save(run_dir / "profile.json")
        if status.status in ("raised", "exited") and status.traceback:
            print(status.traceback, file=sys.stderr, end="")
        if status.status not in ("completed", "stopped_after_window"):
            print(f"torchtriage: {status.status}: {status.message}", file=sys.stderr)
        cells = {**{path: n for path, n in self.cells.profiled.items()},
                 **{path: n for name, path in renames.items() if (n := self.cells.number_of(path)) is not None}}
        notebook = {"execution_count": number, "cell_path": str(cell_file), "first_line": args.first_line,
                    "cells": [{"path": p, "execution_count": n} for p, n in sorted(cells.items(), key=lambda i: i[1])]}
        status_json = {"status": status.status, "message": status.message}
        data = payload(report, status_json, notebook, run_dir)
        return data, html_fallback(run_dir, status_json), text_summary(report, status_json, run_dir, cells)

    def _static_findings(self, profile: Any, number: int, renames: dict[str, str]) -> list[Any]:
        """The findings the profile links: the kernel's cells In [1] .. In [number] analysed as one notebook
        (as the editor and %torchtriage_check see them, under the cwd's [tool.torchtriage] settings), each on
        the file the profile knows its cell as, then the hot files outside the notebook as `profile` checks them."""
        from ..runtime.profiling.finish import cell_static_findings, static_findings
        from .cells import findings_in_files

        try:
            texts, numbers, files = self.cells.notebook(number, renames)
            found = findings_in_files(cell_static_findings(texts, numbers, Path(profile.cwd or os.getcwd())), files)
            return found + static_findings(profile, skip={*renames.values(), *self.cells.profiled})
        except Exception as exc:  # a linter bug must not lose the profile
            profile.warnings.append(f"static check failed: {type(exc).__name__}: {exc}")
            return []

    @line_magic("torchtriage_check")
    def torchtriage_check(self, line: str) -> None:
        """Lint the cells run so far in this kernel (In [1] ... this one), as `torchtriage check` would: cells as
        typed (a cell magic's body included) and the project's settings."""
        from IPython.display import display

        from .check import check_history

        from ..config import load_settings

        history = list(self.shell.history_manager.input_hist_raw) or list(self.shell.user_ns.get("In", []))
        settings, _ = load_settings(Path.cwd())  # the project's [tool.torchtriage], as `torchtriage check` reads it
        display(check_history(history, self.cells.current(), settings), raw=True)


def _run_dir(out: Optional[Path], number: int) -> Path:
    from ..runtime.profiling.finish import new_run_dir

    path = out.expanduser().resolve() if out is not None else new_run_dir(f"cell{number}")
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(TorchtriageMagics(ipython))
