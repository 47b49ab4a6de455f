"""PyTorch 0.3's host read of a scalar: ``loss.data[0]``.

Before ``.item()`` existed (torch 0.4), ``x.data[0]`` on a one-element tensor returned the Python number it
held, copied from the device like ``.item()`` today: ``total_loss += loss.data[0]`` in a step loop waits for
the GPU every step.  (On torch 0.4 and later the same code fails on a 0-d loss, so it is only ever read with
0.3's meaning.)  Only values a step reduces to one number are taken: losses, criteria, errors and accuracies
by name, or what a loss function returns; ``batch.data[0]`` (a row of a batch) is not a read.
"""

from __future__ import annotations

import ast
import re

_SCALAR = re.compile(r"loss|criterion|cost|err|acc|prec|evaluate|metric", re.IGNORECASE)
_SAME_VALUE = frozenset({"mean", "sum", "exp", "float", "double", "detach", "cpu"})  # ``loss.mean()`` is still the loss


def legacy_scalar_read(node: ast.AST) -> ast.expr | None:
    """The tensor read by ``<tensor>.data[0]`` when it is a step's scalar (see the module doc), else None."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)):
        return None
    if not (isinstance(node.slice, ast.Constant) and node.slice.value == 0 and not isinstance(node.slice.value, bool)):
        return None
    data = node.value
    if not (isinstance(data, ast.Attribute) and data.attr == "data"):
        return None
    name = _name_of(data.value)
    return data.value if name is not None and _SCALAR.search(name) else None


def _name_of(node: ast.expr) -> str | None:
    """``loss`` for ``loss``, ``self.loss_S``, ``criterion(out, y)`` and ``loss.mean()``."""
    while isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id
        if not isinstance(func, ast.Attribute):
            return None
        if func.attr not in _SAME_VALUE:
            return func.attr  # ``criterion.loss_fn(...)``: named by the method
        node = func.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
