"""Step-scope questions the memory/debugging rules (TT2xx, TT4xx, TT5xx) share.

A walk that stays in one scope, the key of an assignment target, which hot
regions form one training step, and the tensor a backward call differentiates.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator

from .base import RuleContext
from ..hotloops.finder import HotRegion
from ..incremental.walks import scope_walk
from ._helpers import method_name, names_in

# Objects whose ``.backward(loss)`` differentiates the argument (Accelerate, Fabric, DeepSpeed).
_BACKWARD_OWNERS = re.compile(r"^(self|accelerator|fabric|engine|ds_engine|model|\w+_model|model_engine|trainer|strategy)$")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
OWN_SCOPES = _SCOPES  # what own_walk does not enter


def own_walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` that does not enter nested functions, classes or lambdas (depth first, last
    child first; a statement's walk is kept on it, see :mod:`..walks`)."""
    return iter(scope_walk(node, _SCOPES))


def target_key(node: ast.AST, ctx: RuleContext) -> str | None:
    """A stable key for an assignment target or receiver: ``total``, ``self.hist``."""
    if isinstance(node, ast.Subscript):
        return target_key(node.value, ctx)
    return ctx.dotted(node)


def step_family(ctx: RuleContext, region: HotRegion) -> list[HotRegion]:
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


def differentiated_tensor(ctx: RuleContext, call: ast.Call) -> ast.expr | None:
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


def is_constant(node: ast.AST | None, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def calls_method(node: ast.AST, names: frozenset[str]) -> bool:
    """Whether ``node`` contains a method call named one of ``names``."""
    return any(method_name(n) in names for n in own_walk(node))


__all__ = [
    "calls_method",
    "differentiated_tensor",
    "is_constant",
    "names_in",
    "own_walk",
    "step_family",
    "target_key",
]
