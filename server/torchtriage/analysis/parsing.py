"""Source text -> stdlib ``ast``: the one place the analysis compiles code.

``compile_tree`` compiles with warnings silenced (a ``SyntaxWarning`` for an
invalid escape is the user's business, not ours) and raises on bad syntax;
``parse_source`` turns that into a TT000 finding that says where the syntax
breaks.  Never executes anything.

Legacy code that uses ``async`` as a name (``.cuda(async=True)``, torch 0.3's
spelling of ``non_blocking``; ``def f(async=False)``) is a syntax error since
Python 3.7.  Such a file is compiled with each of those words read as
``LEGACY_ASYNC``, a name of the same length, so every position stays exact;
``legacy_async_findings`` reports each one as the syntax error it is.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Callable

from ..findings import SYNTAX_ERROR_CODE, Applicability, Edit, Finding, Fix, Severity, Span

PARSE_ERRORS = (SyntaxError, ValueError, MemoryError, RecursionError)  # null bytes, absurd nesting
LEGACY_ASYNC = "ASYNC"
_ASYNC_WORD = re.compile(r"\basync\b(?!\s+(?:def|with|for)\b)")
_MOVES = frozenset({"cuda", "to", "copy_", "type"})  # tensor methods whose ``async=`` torch 0.4 renamed


def compile_tree(source: str, path: str = "<string>", top_level_await: bool = False) -> ast.Module:
    """The module's ast; raises one of ``PARSE_ERRORS``.

    ``top_level_await``: accept ``await`` outside functions, as notebook cells do.
    """
    flags = ast.PyCF_ONLY_AST | (ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes etc.
        try:
            return compile(source, path, "exec", flags=flags, dont_inherit=True)
        except SyntaxError:
            legacy = _ASYNC_WORD.sub(LEGACY_ASYNC, source) if "async" in source else source
            if legacy == source:
                raise
            try:
                return compile(legacy, path, "exec", flags=flags, dont_inherit=True)
            except PARSE_ERRORS:
                pass
            raise


def legacy_async_findings(tree: ast.AST, lines: list[str], path: str, span_of: Callable[[ast.AST], Span]) -> list[Finding]:
    """A TT000 finding for each ``async`` a legacy file uses as a name (see the module's docstring); a
    keyword argument of a tensor move gets the rename torch 0.4 made, ``non_blocking=``.  ``span_of``:
    a node's span in characters (the context's ``span``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                span = _async_span(keyword, lines, span_of) if keyword.arg == LEGACY_ASYNC else None
                if span is not None:
                    method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
                    fix = Fix("Rename async= to non_blocking=", Applicability.SAFE, (Edit(span, "non_blocking"),))
                    found.append(_legacy(path, span, fix if method in _MOVES else None))
        elif isinstance(node, ast.arg) and node.arg == LEGACY_ASYNC:
            span = _async_span(node, lines, span_of)
            if span is not None:
                found.append(_legacy(path, span, None))
    return found


def _async_span(node: ast.AST, lines: list[str], span_of: Callable[[ast.AST], Span]) -> Span | None:
    """The span of the word ``async`` a keyword argument or parameter starts with, if the text has it there."""
    start = span_of(node)
    if not 0 < start.line <= len(lines) or lines[start.line - 1][start.column - 1:start.column + 4] != "async":
        return None
    return Span(start.line, start.column, start.line, start.column + 5)


def _legacy(path: str, span: Span, fix: Fix | None) -> Finding:
    return Finding(path, span, SYNTAX_ERROR_CODE, "syntax-error", Severity.ERROR,
                   "SyntaxError since Python 3.7: `async` is a reserved word (torch 0.4 renamed `async=` to "
                   "`non_blocking=`); the rest of the file is analysed as if it were renamed", fix=fix)


def syntax_error_finding(path: str, span: Span, message: str) -> Finding:
    """A TT000 finding."""
    return Finding(path, span, SYNTAX_ERROR_CODE, "syntax-error", Severity.ERROR, message)


def parse_source(source: str, path: str = "<string>", top_level_await: bool = False) -> ast.Module | Finding:
    """The module's ast, or a TT000 finding that says where the syntax breaks."""
    try:
        return compile_tree(source, path, top_level_await)
    except SyntaxError as exc:
        line = exc.lineno or 1
        column = exc.offset or 1
        end_line = exc.end_lineno or line
        end_column = exc.end_offset if exc.end_offset and exc.end_lineno else column + 1
        if (end_line, end_column) <= (line, column):
            end_line, end_column = line, column + 1
        return syntax_error_finding(path, Span(line, max(column, 1), end_line, max(end_column, 1)), f"SyntaxError: {exc.msg}")
    except (ValueError, MemoryError, RecursionError) as exc:
        return syntax_error_finding(path, Span(1, 1, 1, 1), f"cannot parse: {exc or 'nested too deeply'} ({type(exc).__name__})")
