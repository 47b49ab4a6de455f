"""What ``profile``, ``lab`` and ``compare --profile`` read from their command line: the script's arguments, the
interpreter, the folders of user code."""

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


def add_user_root_option(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """``--user-root DIR`` (repeatable), for the commands that profile a script; ``prefix`` starts its help."""
    parser.add_argument(
        "--user-root", action="append", type=Path, default=[], metavar="DIR",
        help=prefix + "a folder whose code is yours: time in it is charged to its lines, not to the call into it (repeatable). "
        "Already yours: the script's project (nearest pyproject.toml, setup.py, setup.cfg or .git), its folder, "
        "the working directory and its project, PYTHONPATH and editable installs; site-packages, the standard "
        "library and torch never are",
    )


def user_root_folders(args: argparse.Namespace) -> list[Path]:
    """The ``--user-root`` folders, absolute; a usage error for one that is not a folder."""
    folders = []
    for folder in args.user_root:
        if not folder.expanduser().is_dir():
            raise UsageError(f"--user-root {folder}: no such folder")
        folders.append(folder.expanduser().resolve())
    return folders
