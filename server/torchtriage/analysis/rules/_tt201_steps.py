"""TT201's step-scope questions: whether the step binds a name afresh, whether code runs
with autograd off (lexically, or through the per-step calls that reach it)."""

from __future__ import annotations

import ast

from .base import RuleContext
from ..hotloops.finder import HotRegion
from ._steps import own_walk

_GRAD_OFF_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"})
_NO_GRAD_LIGHTNING = frozenset({"validation_step", "test_step", "predict_step"})


def rebinds_in_region(ctx: RuleContext, region: HotRegion, key: str, skip: ast.AST) -> bool:
    """Whether the step itself binds ``key`` afresh (``total = 0`` inside the loop).

    Only per-step plain assignments of the same region count; self-referencing
    ones (``total = total + loss``) and ``skip`` itself do not.
    """
    for node in own_walk(region.node):
        if node is skip or ctx.hot.region_of(node) is not region:
            continue
        targets: list[ast.AST] = []
        value: ast.AST | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            bound = [node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else [
                item.optional_vars for item in node.items if item.optional_vars is not None
            ]
            if any(ctx.dotted(t) == key for b in bound for t in ast.walk(b)):
                return True
            continue
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, (ast.Name, ast.Attribute)) and ctx.dotted(sub) == key:
                    if value is None or not any(ctx.dotted(n) == key for n in ast.walk(value)):
                        return True
    return False


def _is_grad_off_with(ctx: RuleContext, node: ast.AST) -> bool:
    if not isinstance(node, (ast.With, ast.AsyncWith)):
        return False
    for item in node.items:
        expr = item.context_expr
        qual = ctx.call_qualname(expr) or ctx.qualname(expr) or ""
        if qual in _GRAD_OFF_CONTEXTS:
            return True
        if qual == "torch.set_grad_enabled" and isinstance(expr, ast.Call) and expr.args:
            first = expr.args[0]
            if isinstance(first, ast.Constant) and first.value is False:
                return True
    return False


def _is_grad_off_function(ctx: RuleContext, node: ast.AST) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (ctx.qualname(target) or "") in _GRAD_OFF_CONTEXTS:
            return True
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name.endswith(("no_grad", "inference_mode")):
            return True  # a project's wrapper of them (``@smart_inference_mode()``)
    return node.name in _NO_GRAD_LIGHTNING and isinstance(ctx.parents.get(node), ast.ClassDef)


def lexically_grad_off(ctx: RuleContext, node: ast.AST) -> bool:
    """Whether ``node`` sits under ``with torch.no_grad()`` or a no-grad function."""
    return any(
        _is_grad_off_with(ctx, a) or _is_grad_off_function(ctx, a) for a in [node, *ctx.ancestors(node)]
    )


def runs_without_grad(ctx: RuleContext, node: ast.AST, region: HotRegion) -> bool:
    """Whether ``node`` runs with autograd off: under no_grad/inference_mode, lexically
    or through the per-step call chain that reaches its step function."""
    seen: set[int] = set()
    current: ast.AST | None = node
    current_region: HotRegion | None = region
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if lexically_grad_off(ctx, current):
            return True
        if current_region is None or current_region.via is None:
            return False
        current = current_region.via
        current_region = ctx.hot.region_of(current)
    return False
