"""What ``profile`` and ``lab`` both read from their command line: the script's arguments and the interpreter."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from ..errors import UsageError


def script_args_and_python(args: argparse.Namespace) -> tuple[list[str], str]:
    """The arguments for the script (a leading ``--`` dropped) and the interpreter's path; a usage
    error when the script or the interpreter does not exist."""
    script_args = list(args.script_args)
    if script_args[:1] == ["--"]:
        script_args = script_args[1:]
    if not args.script.is_file():
        raise UsageError(f"no such script: {args.script}")
    python = shutil.which(args.python) or (args.python if Path(args.python).is_file() else None)
    if python is None:
        raise UsageError(f"interpreter not found: {args.python} (set --python to a Python with torch installed)")
    return script_args, python
