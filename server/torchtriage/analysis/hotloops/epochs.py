"""Epoch loops: loops that are not step loops themselves but hold one, directly or through a
call of a function of the same file that holds one (``for epoch in ...: train_one_epoch(...)``).

They are not per-step (see :mod:`.finder`); rules ask about them through
``HotLoops.epoch_loops`` (a DataLoader re-iterated once per epoch, work repeated every epoch).
"""

from __future__ import annotations

import ast

from ..module_index import ModuleIndex
from .regions import Loop
from .step_markers import LOOP_NODES, last_name


def epoch_loops(ctx: ModuleIndex, calls: list[ast.Call], step_loops: set[ast.AST]) -> list[Loop]:
    """Non-step loops that contain a step loop, directly or through a call of this file (``calls``:
    every call of the module), in source order."""
    epoch: dict[ast.AST, None] = {}
    holders: set[str] = set()
    for loop in step_loops:
        for ancestor in ctx.ancestors(loop):
            if isinstance(ancestor, LOOP_NODES) and ancestor not in step_loops:
                epoch[ancestor] = None
            elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                holders.add(ancestor.name)
    if holders:
        for node in calls:
            func = node.func  # (``last_name``, inlined for the two common shapes: every call of the file)
            name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else last_name(func)
            if name in holders:
                for ancestor in ctx.ancestors(node):
                    if isinstance(ancestor, LOOP_NODES) and ancestor not in step_loops:
                        epoch[ancestor] = None
    return sorted(epoch, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[arg-type]
