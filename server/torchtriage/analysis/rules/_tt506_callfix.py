"""A call-argument fix the shared fixes module lacks: drop one keyword argument (TT506's fix)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ...findings import Applicability, Fix
from ..fixes import replace_expression

if TYPE_CHECKING:
    import libcst as cst

    from .base import RuleContext
else:
    from ..lazy import libcst as cst  # imported on first use: only fixes need it


def without_keyword(call: cst.BaseExpression, name: str) -> cst.BaseExpression:
    """``call`` minus its ``name=...`` argument; the comma style of the rest is kept."""
    if not isinstance(call, cst.Call):
        raise ValueError("not a call")
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            break
    else:
        raise ValueError(f"no keyword {name}")
    removed = args.pop(index)
    if index == len(args) and index > 0:
        # It was the last argument: the one before takes over its trailing comma (or none).
        args[-1] = args[-1].with_changes(comma=removed.comma)
    if not args:
        return call.with_changes(args=args, whitespace_before_args=cst.SimpleWhitespace(""))
    return call.with_changes(args=args)


def remove_keyword_fix(
    ctx: "RuleContext", call: ast.Call, name: str, title: str, applicability: Applicability
) -> Fix:
    """Remove keyword argument ``name`` from ``call``, keeping its formatting."""
    return replace_expression(ctx, call, lambda e: without_keyword(e, name), title, applicability)
