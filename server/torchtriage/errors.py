"""Errors every layer may raise and every host translates (a bottom module: imports nothing)."""

from __future__ import annotations


class UsageError(Exception):
    """A problem with what the user asked for: hosts show the message alone (CLI exit code 2, no traceback)."""
