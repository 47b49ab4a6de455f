"""``torchtriage lsp [--tcp HOST:PORT]``: run the language server (stdio by default)."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from ..errors import UsageError


def run_lsp(args: argparse.Namespace) -> int:
    """Start the server and serve until the client exits."""
    try:  # pygls is an optional dependency: its absence is a usage problem, not a crash
        from ..lsp.server import build_server
    except ImportError as exc:
        raise UsageError(f"torchtriage lsp needs the [lsp] extra (pip install 'torchtriage[lsp]'): {exc}")
    logging.basicConfig(level=getattr(logging, args.log_level), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    server = build_server()
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not port.isdigit():
            raise UsageError(f"--tcp wants HOST:PORT (e.g. 127.0.0.1:2087), got {args.tcp!r}")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0


def register(subparsers: Any) -> None:
    """Add ``lsp`` to the top-level subparsers."""
    parser = subparsers.add_parser("lsp", help="run the language server (stdio, or --tcp HOST:PORT)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (debugging)")
    parser.add_argument(
        "--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="stderr log level"
    )
    parser.set_defaults(handler=run_lsp)
