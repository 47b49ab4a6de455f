"""Whether autograd is off where a node runs: ``no_grad`` blocks, decorators, callers (for TT501).

When the file leaves it open (a context manager held in a variable the file
cannot resolve), the answer is "disabled" so that rules stay silent.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..incremental.walks import subtree
from ._bindings import resolve_name

if TYPE_CHECKING:
    from .base import RuleContext

GRAD_OFF = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
        "torch.set_grad_enabled",
        "torch.autograd.set_grad_enabled",
        "torch.autograd.grad_mode.set_grad_enabled",
    }
)
_SET_GRAD = frozenset(q for q in GRAD_OFF if q.endswith("set_grad_enabled"))
_GRAD_ON = frozenset({"torch.enable_grad", "torch.autograd.enable_grad"})
_NAME_HINTS = ("no_grad", "inference_mode", "inference")
_MAX_CALLER_DEPTH = 3
# calls that need the autograd graph of what they are given (input gradients, saliency, adversarial attacks)
NEEDS_GRAD = frozenset({"grad", "vjp", "jvp", "jacobian", "hessian", "requires_grad_", "retain_grad"})


def _is_true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _manager_turns_grad_off(ctx: "RuleContext", expr: ast.expr, at: ast.AST, depth: int = 0) -> bool | None:
    """True: grad off; False: known to leave grad alone; None: cannot tell."""
    if isinstance(expr, ast.IfExp):
        branches = [_manager_turns_grad_off(ctx, b, at, depth) for b in (expr.body, expr.orelse)]
        return None if None in branches else any(branches)
    if isinstance(expr, ast.Name) and depth < 2:
        resolved = resolve_name(ctx, expr.id, at)
        return None if resolved is None else _manager_turns_grad_off(ctx, resolved, at, depth + 1)
    if not isinstance(expr, ast.Call):
        return None
    qual = ctx.call_qualname(expr) or ""
    if qual in _SET_GRAD:
        return not (expr.args and _is_true(expr.args[0]))
    if qual in GRAD_OFF:
        return True
    if qual in _GRAD_ON or qual.startswith("torch."):
        return False
    last = qual.rsplit(".", 1)[-1].lower()
    if any(hint in last for hint in _NAME_HINTS):
        return True
    return False if qual else None


def with_turns_grad_off(ctx: "RuleContext", stmt: ast.With | ast.AsyncWith) -> bool:
    return any(_manager_turns_grad_off(ctx, item.context_expr, stmt) is not False for item in stmt.items)


def _decorator_turns_grad_off(ctx: "RuleContext", decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    qual = ctx.qualname(target) or ""
    if qual in _SET_GRAD and isinstance(decorator, ast.Call):
        return not (decorator.args and _is_true(decorator.args[0]))
    return qual in GRAD_OFF or any(hint in qual.rsplit(".", 1)[-1].lower() for hint in _NAME_HINTS)


def _set_grad_false_before(ctx: "RuleContext", scope: ast.AST, line: int) -> bool:
    """``torch.set_grad_enabled(False)`` as a statement of ``scope`` before ``line``."""
    body = getattr(scope, "body", [])
    for stmt in body:
        if stmt.lineno >= line:
            break
        value = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(value, ast.Call) and ctx.call_qualname(value) in _SET_GRAD:
            if value.args and isinstance(value.args[0], ast.Constant) and value.args[0].value is False:
                return True
    return False


def _call_sites(ctx: "RuleContext", func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    sites = []
    for node in ctx.nodes_of(ast.Call):
        callee = node.func
        name = getattr(callee, "id", None) or getattr(callee, "attr", None)
        if name == func.name and ctx.enclosing_function(node) is not func:
            sites.append(node)
    return sites


def grad_disabled(ctx: "RuleContext", node: ast.AST, depth: int = 0) -> bool:
    """Whether autograd is off wherever ``node`` runs, as far as this file shows."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.With, ast.AsyncWith)) and with_turns_grad_off(ctx, ancestor):
            return True
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_decorator_turns_grad_off(ctx, d) for d in ancestor.decorator_list):
                return True
            if _set_grad_false_before(ctx, ancestor, getattr(node, "lineno", 0)):
                return True
            if depth >= _MAX_CALLER_DEPTH:
                return False
            sites = _call_sites(ctx, ancestor)
            return bool(sites) and all(grad_disabled(ctx, site, depth + 1) for site in sites)
        if isinstance(ancestor, (ast.Lambda, ast.ClassDef)):
            return False
    return _set_grad_false_before(ctx, ctx.tree, getattr(node, "lineno", 0))


def disables_grad_inside(ctx: "RuleContext", node: ast.AST) -> bool:
    """Whether a ``with no_grad()``-like block sits anywhere inside ``node``, or a legacy
    ``Variable(x, volatile=True)`` (torch <= 0.3's no-grad: nothing computed from it records a graph)."""
    return any(
        isinstance(sub, (ast.With, ast.AsyncWith)) and with_turns_grad_off(ctx, sub) or _volatile_variable(sub)
        for sub in subtree(node)
    )


def _volatile_variable(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and any(k.arg == "volatile" for k in node.keywords)):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    value = next(k.value for k in node.keywords if k.arg == "volatile")
    return name == "Variable" and not (isinstance(value, ast.Constant) and value.value is False)
