"""Source text -> stdlib ``ast``: the one place the analysis compiles code.

``compile_tree`` compiles with warnings silenced (a ``SyntaxWarning`` for an
invalid escape is the user's business, not ours) and raises on bad syntax;
``parse_source`` turns that into a TT000 finding that says where the syntax
breaks.  Never executes anything.
"""

from __future__ import annotations

import ast
import warnings

from ..findings import SYNTAX_ERROR_CODE, Finding, Severity, Span

PARSE_ERRORS = (SyntaxError, ValueError, MemoryError, RecursionError)  # null bytes, absurd nesting


def compile_tree(source: str, path: str = "<string>", top_level_await: bool = False) -> ast.Module:
    """The module's ast; raises one of ``PARSE_ERRORS``.

    ``top_level_await``: accept ``await`` outside functions, as notebook cells do.
    """
    flags = ast.PyCF_ONLY_AST | (ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes etc.
        return compile(source, path, "exec", flags=flags, dont_inherit=True)


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
