"""Loops that evaluate once: the final test of a function the project runs once (:mod:`..project.run_once`).

Such a loop is left out of the step loops when three things hold: its function is one the
project calls once, outside every loop; the loop is not nested in another loop of that
function (a per-epoch validation inside ``for epoch ...`` stays per step); and it
evaluates: the function puts a model in eval mode before the loop (``model.eval()``), or
grad is off around it (``with torch.no_grad():``, ``@torch.no_grad()``).  A loop that
trains is never left out: one that runs backward or steps an optimizer itself, or steps one
through this file's helpers (the finder asks :class:`.step_loops.StepLoopJudge`); a helper
that runs ``backward()`` only for the inputs' gradient (an adversarial attack) trains nothing.
"""

from __future__ import annotations

import ast

from ..module_index import ModuleIndex
from .regions import FunctionNode, Loop
from .step_markers import LOOP_NODES

_GRAD_OFF = frozenset({"no_grad", "inference_mode"})


def evaluates_once(ctx: ModuleIndex, loop: Loop, run_once: frozenset[str]) -> bool:
    """Whether ``loop`` is the one-pass evaluation of a function the project runs once (see the module doc)."""
    func = evaluation_function(ctx, loop)
    return func is not None and func.name in run_once


def evaluation_function(ctx: ModuleIndex, loop: Loop) -> FunctionNode | None:
    """The function ``loop`` is the evaluation of: the loop is not nested in another loop of that function, and
    the function puts a model in eval mode before it or turns grad off around it; else None."""
    func = ctx.enclosing_function(loop)
    if func is None:
        return None
    grad_off = any(_grad_off(d) for d in func.decorator_list)
    for ancestor in ctx.ancestors(loop):
        if ancestor is func:
            break
        if isinstance(ancestor, LOOP_NODES):
            return None  # run once per pass of an enclosing loop
        if isinstance(ancestor, (ast.With, ast.AsyncWith)) and any(_grad_off(item.context_expr) for item in ancestor.items):
            grad_off = True
    return func if grad_off or _eval_mode_before(ctx, func, loop) else None


def _grad_off(expr: ast.expr) -> bool:
    """``torch.no_grad()``, ``no_grad()``, ``torch.inference_mode()`` (called or not, as a decorator)."""
    node = expr.func if isinstance(expr, ast.Call) else expr
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name in _GRAD_OFF


def _eval_mode_before(ctx: ModuleIndex, func: FunctionNode, loop: Loop) -> bool:
    """``model.eval()`` in the function's lines before the loop (a text test: the call is read as written)."""
    return any(".eval()" in line for line in ctx.lines[func.lineno - 1:loop.lineno - 1])
