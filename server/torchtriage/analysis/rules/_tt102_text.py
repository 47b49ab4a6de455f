"""TT102 beyond print and log calls: a device tensor turned into text, or handed to a metric sink, per step.

* text built outside a log call: an f-string part (``f"{loss:.4f}"``), ``"%g" % loss``,
  ``"{}".format(loss)``: formatting a CUDA tensor reads its value (``Tensor.__format__``);
* metric sinks that take the tensor itself: ``writer.add_scalar(tag, loss, step)`` /
  ``add_scalars``, ``mlflow.log_metric(key, loss)``, ``wandb.log({"loss": loss})``: each
  converts it to a Python number on the spot.

A ``.item()`` handed to them is TT101's finding (the sync is written out), and text inside a
``print`` / logger call is the log call's; only the tensor itself counts here.
"""

from __future__ import annotations

import ast
from typing import Iterator

from ..hotloops.finder import HotRegion
from ._steplog import enclosing_log_call, formatted_values
from ._tensors import TensorOracle
from .base import RuleContext

SCALAR_SINKS = frozenset({"add_scalar", "add_scalars", "log_metric", "log_metrics"})
SINK_QUALNAMES = frozenset({"wandb.log", "mlflow.log_metric", "mlflow.log_metrics"})
SINK_METHODS = SCALAR_SINKS | {"log"}  # the last name of every sink: a cheap first cut
Shown = tuple[ast.expr, ast.AST, str, HotRegion]  # (the tensor, the node to report, what turns it into text, region)


def text_and_sinks(ctx: RuleContext, tensors: TensorOracle) -> Iterator[Shown]:
    """Each per-step device tensor turned into text outside a log call, or handed to a metric sink."""
    for node, region in ctx.hot.nodes((ast.JoinedStr, ast.BinOp, ast.Call)):
        found = _turned_into_text(ctx, node)
        if found is None or enclosing_log_call(ctx, node) is not None or _inside_other_text(ctx, node):
            continue
        values, what = found
        shown = next((v for v in values if tensors.is_tensor(v, region, strict=True) is True), None)
        if shown is not None:
            yield shown, shown, what, region


def _turned_into_text(ctx: RuleContext, node: ast.AST) -> tuple[list[ast.expr], str] | None:
    if isinstance(node, ast.JoinedStr):
        return [part.value for part in node.values if isinstance(part, ast.FormattedValue)], "an f-string"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _is_text(node.left):
        right = node.right
        return (list(right.elts) if isinstance(right, (ast.Tuple, ast.List)) else [right]), "`%` formatting"
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "format" and _is_text(func.value):
        return [*node.args, *(k.value for k in node.keywords)], "`str.format`"
    if not isinstance(func, ast.Attribute) or func.attr not in SINK_METHODS:
        return None
    if func.attr in SCALAR_SINKS or ctx.call_qualname(node) in SINK_QUALNAMES:
        sink = ctx.dotted(func) or "metric sink"
        values = ast.Call(func=func, args=node.args[1:] if _keyed(func) else node.args, keywords=node.keywords)
        return formatted_values(values), f"`{sink}`"
    return None


def _keyed(func: ast.expr) -> bool:
    """``add_scalar(tag, value)`` / ``log_metric(key, value)``: the first argument is the name, not a value."""
    return isinstance(func, ast.Attribute) and func.attr in ("add_scalar", "add_scalars", "log_metric")


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _inside_other_text(ctx: RuleContext, node: ast.AST) -> bool:
    """An f-string nested in another text expression (reported once, at the outer one)."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, ast.stmt):
            return False
        if isinstance(ancestor, ast.JoinedStr):
            return True
        if isinstance(ancestor, ast.BinOp) and isinstance(ancestor.op, ast.Mod) and _is_text(ancestor.left):
            return True
    return False
