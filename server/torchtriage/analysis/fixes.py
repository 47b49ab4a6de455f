"""Format-preserving fixes, shared by ``--fix`` and LSP code actions.

Findings come from the stdlib ``ast``; a fix re-parses only the snippet it
changes with libcst, transforms that concrete tree (which keeps comments,
spacing and quoting), and emits a text edit over the snippet's span.  Edits are
plain (span, text) pairs, so the CLI applies them to files and the language
server sends them as LSP TextEdits unchanged.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from ..findings import Applicability, Edit, Finding, Fix, Span
from .text import indentation, line_offsets, span_offsets

if TYPE_CHECKING:
    import libcst as cst

    from .context import ModuleContext
else:
    from .lazy import libcst as cst  # imported on first use: only fixes need it


def code_for(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def parse_expression_snippet(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def replace_expression(
    ctx: "ModuleContext",
    node: ast.expr,
    transform: Callable[[cst.BaseExpression], cst.BaseExpression],
    title: str,
    applicability: Applicability,
) -> Fix:
    """Re-parse ``node``'s source with libcst, transform it, and replace it."""
    span = ctx.span(node)
    offsets = ctx.line_offsets
    start, end = span_offsets(offsets, span)
    expression = parse_expression_snippet(ctx.source[start:end])
    return Fix(title, applicability, (Edit(span, code_for(transform(expression))),))


def has_star_kwargs(call: ast.Call) -> bool:
    return any(keyword.arg is None for keyword in call.keywords)


def with_keyword(call: cst.BaseExpression, name: str, value_code: str) -> cst.BaseExpression:
    """``call`` with keyword ``name=value`` set: replaced if present, appended if not.

    An appended argument follows the call's layout: on its own line with a
    trailing comma when the call is written one argument per line.
    """
    if not isinstance(call, cst.Call):
        raise ValueError("not a call")
    value = cst.parse_expression(value_code)
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[index] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new_arg = cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )
    if args and isinstance(args[-1].comma, cst.Comma):
        # Trailing comma: keep the style, new argument gets the same comma and spacing.
        last = args[-1]
        new_arg = new_arg.with_changes(comma=last.comma)
        own = last.comma.whitespace_after
        if isinstance(own, cst.ParenthesizedWhitespace) and len(args) >= 2:
            previous_comma = args[-2].comma
            if isinstance(previous_comma, cst.Comma):
                # The last argument keeps its own trailing comment; the new one starts clean.
                new_arg = new_arg.with_changes(
                    comma=last.comma.with_changes(whitespace_after=own.with_changes(first_line=cst.TrailingWhitespace()))
                )
                borrowed = previous_comma.whitespace_after
                if isinstance(borrowed, cst.ParenthesizedWhitespace):
                    borrowed = borrowed.with_changes(first_line=own.first_line, empty_lines=own.empty_lines)
                args[-1] = last.with_changes(comma=previous_comma.with_changes(whitespace_after=borrowed))
    elif args:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(new_arg)
    return call.with_changes(args=args)


def add_keywords_fix(
    ctx: "ModuleContext",
    call: ast.Call,
    keywords: Sequence[tuple[str, str]],
    title: str,
    applicability: Applicability,
) -> Fix:
    """Set keyword arguments on a call (``non_blocking=True``, ``num_workers=4``...)."""

    def transform(expression: cst.BaseExpression) -> cst.BaseExpression:
        for name, value in keywords:
            expression = with_keyword(expression, name, value)
        return expression

    return replace_expression(ctx, call, transform, title, applicability)


def needs_parentheses(expression: cst.BaseExpression) -> bool:
    atomic = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer, cst.Float)
    return not isinstance(expression, atomic) and not expression.lpar


def call_method(expression: cst.BaseExpression, method: str, args: str = "") -> cst.BaseExpression:
    """``expression.method(args)``, parenthesising the receiver when it needs it."""
    receiver = expression
    if needs_parentheses(expression):
        receiver = expression.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    call = cst.parse_expression(f"_.{method}({args})")
    assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
    return call.with_changes(func=call.func.with_changes(value=receiver))


def method_call_fix(
    ctx: "ModuleContext", node: ast.expr, method: str, title: str, applicability: Applicability, args: str = ""
) -> Fix:
    """Append ``.method(args)`` to an expression (``loss`` -> ``loss.detach()``)."""
    return replace_expression(ctx, node, lambda e: call_method(e, method, args), title, applicability)


def statement_lines_span(ctx: "ModuleContext", stmt: ast.stmt) -> Span:
    """The whole lines a statement occupies, including the final newline."""
    end_line = stmt.end_lineno or stmt.lineno
    return Span(stmt.lineno, 1, end_line + 1, 1)


def _is_alone_in_block(ctx: "ModuleContext", stmt: ast.stmt) -> bool:
    parent = ctx.parents.get(stmt)
    for _, value in ast.iter_fields(parent) if parent is not None else ():
        if isinstance(value, list) and stmt in value:
            return len(value) == 1
    return False


def _is_only_statement_on_its_lines(ctx: "ModuleContext", stmt: ast.stmt) -> bool:
    first = ctx.lines[stmt.lineno - 1]
    last = ctx.lines[(stmt.end_lineno or stmt.lineno) - 1]
    before = first[: ctx.char_column(stmt.lineno, stmt.col_offset)]
    after = last[ctx.char_column(stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0) :]
    return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def remove_statement_fix(
    ctx: "ModuleContext", stmt: ast.stmt, title: str, applicability: Applicability
) -> Fix | None:
    """Delete a statement's lines; a statement alone in its block becomes ``pass``."""
    if not _is_only_statement_on_its_lines(ctx, stmt):
        return None
    if _is_alone_in_block(ctx, stmt):
        return Fix(title, applicability, (Edit(ctx.span(stmt), "pass"),))
    return Fix(title, applicability, (Edit(statement_lines_span(ctx, stmt), ""),))


def insert_lines_fix(
    ctx: "ModuleContext", before_line: int, lines: Iterable[str], title: str, applicability: Applicability
) -> Fix:
    """Insert whole lines before a 1-based line, indented like that line."""
    indent = indentation(ctx.lines[before_line - 1]) if before_line <= len(ctx.lines) else ""
    text = "".join(f"{indent}{line}\n" for line in lines)
    return Fix(title, applicability, (Edit(Span(before_line, 1, before_line, 1), text),))


# --- applying -------------------------------------------------------------------


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (later ones first so offsets stay valid)."""
    offsets = line_offsets(source)
    ranges = sorted(
        ((*span_offsets(offsets, edit.span), edit.content) for edit in edits),
        key=lambda item: (item[0], item[1]),
        reverse=True,
    )
    result = source
    last_start = len(source) + 1
    for start, end, content in ranges:
        if end > last_start:
            continue  # overlapping: skip, the next round will retry
        result = result[:start] + content + result[end:]
        last_start = start
    return result


def select_fixes(findings: Iterable[Finding], unsafe: bool) -> list[Fix]:
    """Fixes to apply in one round: allowed applicability, no overlapping edits."""
    chosen: list[Fix] = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for finding in findings:
        fix = finding.fix
        if fix is None or (fix.applicability is Applicability.UNSAFE and not unsafe):
            continue
        ranges = [((e.span.line, e.span.column), (e.span.end_line, e.span.end_column)) for e in fix.edits]
        if any(not (end <= t_start or start >= t_end) or start == t_start for start, end in ranges for t_start, t_end in taken):
            continue
        taken.extend(ranges)
        chosen.append(fix)
    return chosen
