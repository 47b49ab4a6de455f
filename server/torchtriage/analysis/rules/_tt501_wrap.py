"""Wrap a statement in a ``with`` block by re-indenting its lines, comments kept (TT501's fix)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ...findings import Applicability, Edit, Fix, Span
from ..text import indentation, line_offsets, split_lines

if TYPE_CHECKING:
    from .base import RuleContext


def _spans_lines_in_a_string(stmt: ast.stmt) -> bool:
    """A string literal over several lines: re-indenting would change its value."""
    return any(
        isinstance(node, (ast.Constant, ast.JoinedStr))
        and (node.end_lineno or node.lineno) > node.lineno
        and (isinstance(node, ast.JoinedStr) or isinstance(node.value, (str, bytes)))
        for node in ast.walk(stmt)
    )


def _indent_unit(ctx: "RuleContext", stmt: ast.stmt) -> str:
    """One more level of indentation, in the style of the statement's own body."""
    header = indentation(ctx.lines[stmt.lineno - 1])
    body = getattr(stmt, "body", None)
    if body and body[0].lineno != stmt.lineno:
        inner = indentation(ctx.lines[body[0].lineno - 1])
        if inner.startswith(header) and len(inner) > len(header):
            return inner[len(header) :]
    return "\t" if header.startswith("\t") else "    "


def wrap_in_with_fix(
    ctx: "RuleContext", stmt: ast.stmt, manager: str, title: str, applicability: Applicability
) -> Fix | None:
    """Put ``stmt`` (whole lines) inside ``with <manager>:``; None when that is not clean."""
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    header_line = ctx.lines[first - 1]
    if header_line[: ctx.char_column(first, stmt.col_offset)].strip() or _spans_lines_in_a_string(stmt):
        return None
    offsets = line_offsets(ctx.source)
    start, end = offsets[first - 1], offsets[min(last, len(offsets) - 1)]
    original = ctx.source[start:end]
    unit = _indent_unit(ctx, stmt)
    newline = "\r\n" if original.endswith("\r\n") else "\r" if original.endswith("\r") else "\n"
    lines = split_lines(original, keepends=True)
    body = "".join(line if not line.strip() else unit + line for line in lines)
    text = f"{indentation(header_line)}with {manager}:{newline}{body}"
    return Fix(title, applicability, (Edit(Span(first, 1, last + 1, 1), text),))
