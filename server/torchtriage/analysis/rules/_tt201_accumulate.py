"""Where a step adds a value to something that may outlive it (for TT201)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .base import RuleContext
from ..hotloops.finder import is_backward_call
from ._tt201_graph import bound_names
from ._helpers import method_name
from ._steps import differentiated_tensor, is_constant, own_walk, target_key

_ACCUMULATING_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)
_STORE_METHODS = {"append": 0, "extend": 0, "insert": 1, "appendleft": 0}


@dataclass(frozen=True)
class Site:
    """One place where a step value is added to something that outlives the step."""

    statement: ast.stmt
    accumulator: ast.expr  # what keeps the value: ``total``, ``self.losses``, ``hist``
    value: ast.expr  # what is kept: ``loss``, ``logits``


def _same(ctx: RuleContext, a: ast.AST, b: ast.AST) -> bool:
    return ctx.segment(a).replace(" ", "") == ctx.segment(b).replace(" ", "")


def accumulation_site(ctx: RuleContext, node: ast.AST) -> Site | None:
    """The accumulation that ``node`` performs, if it is one."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, _ACCUMULATING_OPS):
        return Site(node, node.target, node.value)
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            if _same(ctx, target, value.left):
                return Site(node, target, value.right)
            if _same(ctx, target, value.right):
                return Site(node, target, value.left)
        if isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Constant):
            return Site(node, target, value)  # ``preds[batch_idx] = logits``
        return None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        index = _STORE_METHODS.get(method_name(call) or "")
        if index is not None and len(call.args) > index:
            return Site(node, call.func.value, call.args[index])  # type: ignore[attr-defined]
    return None


def grad_disabled_file(ctx: RuleContext) -> bool:
    """``torch.set_grad_enabled(False)`` as a statement: autograd is off for the script."""
    if "set_grad_enabled" not in ctx.source:
        return False
    for node in ctx.nodes_of(ast.Expr):
        if isinstance(node, ast.Expr) and ctx.call_qualname(node.value) == "torch.set_grad_enabled":
            args = node.value.args  # type: ignore[attr-defined]
            if args and is_constant(args[0], False):
                return True
    return False


def _mentions(ctx: RuleContext, node: ast.AST, keys: set[str]) -> bool:
    return any(isinstance(n, (ast.Name, ast.Attribute)) and ctx.dotted(n) in keys for n in ast.walk(node))


def backpropagated_later(ctx: RuleContext, site: Site) -> bool:
    """The kept graphs are wanted: a later backward runs through the accumulator
    (``torch.stack(losses).sum().backward()``, ``loss = losses[i]; loss.backward()``)."""
    key = target_key(site.accumulator, ctx)
    scope = ctx.enclosing_function(site.statement) or ctx.tree
    if key is None:
        return False
    keys = {key}
    nodes = list(own_walk(scope))
    for node in nodes:  # names read back out of the accumulator
        if isinstance(node, ast.Assign) and node is not site.statement and _mentions(ctx, node.value, {key}):
            keys |= {name for t in node.targets for name in bound_names(t)}
    for node in nodes:
        if isinstance(node, ast.Call) and (is_backward_call(node) or method_name(node) == "manual_backward"):
            tensor = differentiated_tensor(ctx, node)
            if tensor is not None and _mentions(ctx, tensor, keys):
                return True
    return False
