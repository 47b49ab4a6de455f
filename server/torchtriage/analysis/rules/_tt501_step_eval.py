"""TT501 outside evaluation loops: a model put in eval mode and run with autograd on inside training code.

Full-batch training (graph networks, small tabular models) and GAN sample dumps evaluate without a
loop of their own: the training step ends with ``model.eval(); output = model(features, adj)``, or
a function the training loop calls does ``G.eval(); fake = G(z)``.  These forward passes record the
autograd graph like the evaluation loops the rule already judges.  Found here:

* in a per-step function reached from training code, or a function the training loop calls (under a
  guard or not), or the function that holds a training loop;
* a call of the very receiver put in eval mode (``model``, ``self.G_AB``), after its ``.eval()``, in
  the same function, outside any loop (the loops are the rule's other part), not under ``no_grad``;
* and nothing after the ``.eval()`` in that function needs the graph: no ``backward()``, no
  optimizer step, no ``autograd.grad``, and the receiver is not put back in ``.train()`` before the call.
"""

from __future__ import annotations

import ast
from typing import Iterator

from ..hotloops.finder import HotLoops
from ..hotloops.step_markers import SCOPE_NODES, is_backward_call, is_optimizer_step
from ..incremental.walks import scope_walk
from ._loaders import regions_reached
from ._tt501_grad_mode import NEEDS_GRAD, grad_disabled
from .base import RuleContext

_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def step_eval_calls(ctx: RuleContext, hot: HotLoops) -> Iterator[ast.Call]:
    """The model calls after ``.eval()`` in training code that record a graph nobody uses."""
    if ".eval(" not in ctx.source and ".train(False" not in ctx.source:
        return
    switched: dict[FunctionNode, None] = {}  # the functions that put something in eval mode: few, so looked at first
    for call in ctx.nodes_of(ast.Call):
        if _mode_call(call, "eval"):
            function = ctx.enclosing_function(call)
            if function is not None:
                switched[function] = None
    if not switched:
        return
    training = [r for r in hot.regions if r.trains]
    for function in switched:
        if _runs_in_training(ctx, hot, function, training):
            yield from _calls_after_eval(ctx, function)


def _runs_in_training(ctx: RuleContext, hot: HotLoops, function: FunctionNode, training: list) -> bool:
    """Part of training: a per-step function reached from training code, the function holding a training
    loop, or a function of this file a training loop calls (under a guard or not)."""
    if any(region.node is function for region in regions_reached(ctx, training, hot)):
        return True
    if any(ctx.enclosing_function(region.node) is function for region in training):
        return True
    if ctx.is_method(function):
        return False
    for call in ctx.nodes_of(ast.Call):
        if isinstance(call.func, ast.Name) and call.func.id == function.name:
            if any(a is region.node for a in ctx.ancestors(call) for region in training):
                return True
    return False


def _calls_after_eval(ctx: RuleContext, function: FunctionNode) -> Iterator[ast.Call]:
    nodes = scope_walk(function, SCOPE_NODES)
    modes = [(n, ctx.dotted(n.func.value)) for n in nodes if _mode_call(n, "eval")]  # type: ignore[attr-defined]
    for switch, receiver in modes:
        if not receiver or _needs_graph_after(nodes, switch.lineno):
            continue
        back = min((n.lineno for n in nodes if _mode_call(n, "train") and ctx.dotted(n.func.value) == receiver  # type: ignore[attr-defined]
                    and n.lineno > switch.lineno), default=None)
        for node in nodes:
            if (isinstance(node, ast.Call) and node.lineno > switch.lineno and (back is None or node.lineno < back)
                    and node.args and ctx.dotted(_runs(node.func)) == receiver
                    and not _inside_loop(ctx, node, function) and not grad_disabled(ctx, node)):
                yield node


def _mode_call(node: ast.AST, mode: str) -> bool:
    """``receiver.eval()`` / ``receiver.train()`` (``train(False)`` is eval mode too)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords):
        return False
    if node.func.attr == mode and not node.args:
        return True
    off = len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and node.args[0].value is False
    return mode == "eval" and node.func.attr == "train" and off


def _runs(func: ast.expr) -> ast.expr:
    """The module a call runs: ``model(x)`` and ``model.forward(x)`` both run ``model``."""
    return func.value if isinstance(func, ast.Attribute) and func.attr == "forward" else func


def _needs_graph_after(nodes: list[ast.AST], line: int) -> bool:
    for node in nodes:
        if getattr(node, "lineno", 0) <= line:
            continue
        if is_backward_call(node) or is_optimizer_step(node):
            return True
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in NEEDS_GRAD:
                return True
        if isinstance(node, ast.keyword) and node.arg == "requires_grad":
            return True
    return False


def _inside_loop(ctx: RuleContext, node: ast.AST, function: FunctionNode) -> bool:
    for ancestor in ctx.ancestors(node):
        if ancestor is function:
            return False
        if isinstance(ancestor, _LOOPS):
            return True
    return False
