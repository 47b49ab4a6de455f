"""Command line: ``torchtriage check | fix | rules | explain | profile | analyze | compare | lab | lsp``.

A host: it translates flags into calls of the core and prints what comes back;
nothing below it imports it.  One module per command group registers its
subcommands; ``main`` maps errors to exit codes (2: usage or internal error).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from typing import Sequence

from .. import __version__
from ..errors import UsageError
from . import analyze, check, compare, lab, lsp, profile

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
INTERRUPTIBLE_COMMANDS = ("profile", "lab", "fix")  # they run the user's script and stop it on SIGINT
COMMAND_GROUPS = (check, profile, analyze, compare, lab, lsp)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command group's subcommands."""
    parser = argparse.ArgumentParser(prog="torchtriage", description="Find and fix why PyTorch training is slow.")
    parser.add_argument("--version", action="version", version=f"torchtriage {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.register(sub)
    return parser


def _interruptible() -> None:
    """Make SIGINT raise KeyboardInterrupt even when this process inherited it ignored.

    Ctrl-C, and an editor's or the Jupyter server's cancel (SIGINT to the process group),
    is how a profile or a lab run is stopped with what was recorded kept.  Python leaves
    an inherited SIG_IGN in place (``nohup``, a background job, a server started that way),
    so without this a cancel would never reach the run.  Only for the commands that run a
    script: the others (the language server) keep what their parent chose.
    """
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in INTERRUPTIBLE_COMMANDS:
        _interruptible()
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_ERROR
    try:
        return int(args.handler(args))
    except UsageError as exc:
        print(f"torchtriage: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("torchtriage: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): silence the final flush of stdout too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception:  # a bug of ours: say so, keep the traceback for the report
        traceback.print_exc()
        print("torchtriage: internal error (please report it, with the traceback above)", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
