"""Step-scope questions the memory/debugging rules (TT2xx, TT4xx, TT5xx) share.

Which names a step (re)binds, whether code runs with autograd off, which hot
regions form one training step, and the local name of ``torch``.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator

from ..context import ModuleContext
from ..hotloops.finder import HotRegion
from ..incremental.walks import scope_walk
from ._helpers import method_name, names_in

_GRAD_OFF_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"})
_NO_GRAD_LIGHTNING = frozenset({"validation_step", "test_step", "predict_step"})
# Objects whose ``.backward(loss)`` differentiates the argument (Accelerate, Fabric, DeepSpeed).
_BACKWARD_OWNERS = re.compile(r"^(self|accelerator|fabric|engine|ds_engine|model|\w+_model|model_engine|trainer|strategy)$")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
OWN_SCOPES = _SCOPES  # what own_walk does not enter


def own_walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` that does not enter nested functions, classes or lambdas (depth first, last
    child first; a statement's walk is kept on it, see :mod:`..walks`)."""
    return iter(scope_walk(node, _SCOPES))


def target_key(node: ast.AST, ctx: ModuleContext) -> str | None:
    """A stable key for an assignment target or receiver: ``total``, ``self.hist``."""
    if isinstance(node, ast.Subscript):
        return target_key(node.value, ctx)
    return ctx.dotted(node)


def rebinds_in_region(ctx: ModuleContext, region: HotRegion, key: str, skip: ast.AST) -> bool:
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


def _is_grad_off_with(ctx: ModuleContext, node: ast.AST) -> bool:
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


def _is_grad_off_function(ctx: ModuleContext, node: ast.AST) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (ctx.qualname(target) or "") in _GRAD_OFF_CONTEXTS:
            return True
    return node.name in _NO_GRAD_LIGHTNING and isinstance(ctx.parents.get(node), ast.ClassDef)


def lexically_grad_off(ctx: ModuleContext, node: ast.AST) -> bool:
    """Whether ``node`` sits under ``with torch.no_grad()`` or a no-grad function."""
    return any(
        _is_grad_off_with(ctx, a) or _is_grad_off_function(ctx, a) for a in [node, *ctx.ancestors(node)]
    )


def runs_without_grad(ctx: ModuleContext, node: ast.AST, region: HotRegion) -> bool:
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


def step_family(ctx: ModuleContext, region: HotRegion) -> list[HotRegion]:
    """The regions that make up one step with ``region``: its root step plus every
    step function reached from it (``d_step(); g_step()`` called from one loop)."""

    def root(r: HotRegion) -> HotRegion:
        seen: set[int] = set()
        while r.via is not None and id(r) not in seen:
            seen.add(id(r))
            parent = ctx.hot.region_of(r.via)
            if parent is None:
                break
            r = parent
        return r

    top = root(region)
    return [r for r in ctx.hot.regions if root(r) is top]


def differentiated_tensor(ctx: ModuleContext, call: ast.Call) -> ast.expr | None:
    """The tensor a backward call differentiates: ``loss`` in ``loss.backward()``,
    ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``,
    ``self.manual_backward(loss)`` and ``torch.autograd.backward(loss)``."""
    if not isinstance(call.func, ast.Attribute):
        return call.args[0] if call.args else None
    if call.func.attr != "backward" or ctx.call_qualname(call) == "torch.autograd.backward":
        return call.args[0] if call.args else None
    receiver = call.func.value
    owner = receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
    if call.args and _BACKWARD_OWNERS.match(owner):
        return call.args[0]
    if method_name(receiver) == "scale" and receiver.args:  # type: ignore[attr-defined]
        return receiver.args[0]  # type: ignore[attr-defined]
    return receiver


def torch_alias(ctx: ModuleContext) -> str | None:
    """The local name bound to the ``torch`` module, if the file imports it."""
    if ctx.aliases.get("torch") == "torch":
        return "torch"
    for local, qualified in ctx.aliases.items():
        if qualified == "torch":
            return local
    return None


def is_constant(node: ast.AST | None, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def calls_method(node: ast.AST, names: frozenset[str]) -> bool:
    """Whether ``node`` contains a method call named one of ``names``."""
    return any(method_name(n) in names for n in own_walk(node))


__all__ = [
    "calls_method",
    "differentiated_tensor",
    "is_constant",
    "lexically_grad_off",
    "names_in",
    "own_walk",
    "rebinds_in_region",
    "runs_without_grad",
    "step_family",
    "target_key",
    "torch_alias",
]
