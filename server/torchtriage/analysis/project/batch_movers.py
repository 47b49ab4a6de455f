"""Project functions that copy the step data handed to them to a device.

Model wrappers in the pix2pix / BasicSR style take the batch in a method of another
file and move it there: the step loop says ``model.set_input(images, labels)`` (or
``model.feed_data(batch)``) and the wrapper's ``set_input`` does ``self.input =
x.cuda()``.  The loop's own file then copies nothing to the GPU that it can see, yet
every batch its loader yields goes to the device from pageable memory (TT303).  This
finds, per file, the names of the functions its per-step code hands step data to
whose per-step body moves that data to a device, itself or by handing it on to such a
function of its own (Tacotron 2's ``model.parse_batch(batch)`` calls ``to_gpu(x)``,
which does ``x.cuda()``).
"""

from __future__ import annotations

import ast
from typing import Callable, Iterable

from ..hotloops.finder import HotLoops
from .modules import FunctionNode, ProjectModule

Handoff = tuple[ast.Call, ProjectModule, FunctionNode]  # a per-step call handing step data, and its target


def batch_movers(
    handoffs: dict[ProjectModule, Iterable[Handoff]], hot_of: Callable[[ProjectModule], HotLoops]
) -> dict[ProjectModule, frozenset[str]]:
    """Per calling file: the called names (``set_input``) whose target copies the step data it is
    handed to a device (``hot_of``: a file's hot loops with the project's final entries)."""
    from ..rules._loaders import called_name, moves_data_to_device

    found: dict[ProjectModule, set[str]] = {}
    for module, calls in handoffs.items():
        for call, owner, func in calls:
            name = called_name(call)
            if name is None or name in found.get(module, ()) or owner.ctx is None:
                continue
            hot = hot_of(owner)
            region = next((r for r in hot.regions if r.node is func), None)
            if region is not None and region.batch_names and moves_data_to_device(owner.ctx, [region], hot):
                found.setdefault(module, set()).add(name)
    while _hand_on(handoffs, found):  # a function that hands the data on to a mover moves it too
        pass
    return {module: frozenset(names) for module, names in found.items()}


def _hand_on(handoffs: dict[ProjectModule, Iterable[Handoff]], found: dict[ProjectModule, set[str]]) -> bool:
    """Add the calls whose target hands its step data on to a mover of its own file; whether any was added."""
    from ..rules._loaders import called_name

    added = False
    for module, calls in handoffs.items():
        for call, owner, func in calls:
            name = called_name(call)
            if name is None or name in found.get(module, ()):
                continue
            movers = found.get(owner, set())
            if any(called_name(inner) in movers and _inside(inner, func) for inner, _, _ in handoffs.get(owner, ())):
                found.setdefault(module, set()).add(name)
                added = True
    return added


def _inside(node: ast.AST, func: FunctionNode) -> bool:
    """Whether a node of the function's file lies in the function's body."""
    return func.lineno <= getattr(node, "lineno", -1) <= (func.end_lineno or func.lineno)
