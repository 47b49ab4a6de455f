"""What one loop or function does by itself: the facts :mod:`.hotloops` classifies them by.

Everything here depends on the node's own subtree only, so it is cached on the
node (see :mod:`.memo`) and survives edits elsewhere in the file.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .regions import FunctionNode, Loop
from ..incremental.memo import subtree_memo
from .step_markers import (
    SCOPE_NODES,
    is_backward_call,
    is_batch_fetch,
    is_loader_like,
    is_model_call,
    is_optimizer_step,
    last_name,
    looks_like_batch_param,
    names_in,
    own_nodes,
    propagate_batch_names,
    target_names,
)

RANGES = frozenset({"range", "trange"})  # loops that count, over no data


@dataclass(frozen=True)
class LoopFacts:
    data_names: frozenset[str]  # batch names bound by the loop and propagated through its body
    trains: bool  # its own body runs backward or steps an optimizer
    calls_model: bool  # its own body calls the model on the loop's data
    called_names: tuple[str, ...]  # plain-name functions its own body calls, in order
    model_callees: tuple[str | None, ...] = ()  # for the model calls: the plain name called, else None
    self_called: tuple[str, ...] = ()  # methods its own body calls on ``self``
    fetches_batch: bool = False  # its own body fetches a batch (``batch = next(it)``)
    slices_by_stride: bool = False  # a ``range`` loop with a stride whose body slices by its counter
    calls: tuple[ast.Call, ...] = ()  # every call of its own body


def loop_facts(loop: Loop) -> LoopFacts:
    """The facts of a loop's own body (nested loops and definitions excluded)."""

    def compute() -> LoopFacts:
        data_names: set[str] = set()
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            data_names = target_names(loop.target, loop.iter)[0]
        own = list(own_nodes(loop.body))
        data_names = propagate_batch_names(loop.body, data_names, own)
        batched = _in_batch_comprehensions(own)
        model_calls = [n for n in own if is_model_call(n, data_names) and id(n) not in batched]
        calls = [n for n in own if isinstance(n, ast.Call)]
        return LoopFacts(
            frozenset(data_names),
            any(is_backward_call(n) or is_optimizer_step(n) for n in own),
            bool(model_calls),
            tuple(dict.fromkeys(n.func.id for n in calls if isinstance(n.func, ast.Name))),
            tuple(n.func.id if isinstance(n.func, ast.Name) else None for n in model_calls),  # type: ignore[attr-defined]
            tuple(dict.fromkeys(n.func.attr for n in calls if _is_self_call(n))),  # type: ignore[attr-defined]
            any(is_batch_fetch(n) for n in calls),
            _slices_by_stride(loop, own),
            tuple(calls),
        )

    return subtree_memo(loop, "loop_facts", compute)


def _is_self_call(call: ast.Call) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"


def _slices_by_stride(loop: Loop, own: list[ast.AST]) -> bool:
    """``for i in range(0, n, chunk): x = feats[i : i + chunk]``: each iteration takes one slice
    (a chunk loop, when what it slices is a tensor)."""
    if not (
        isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
        and isinstance(loop.iter, ast.Call) and last_name(loop.iter.func) in RANGES and len(loop.iter.args) == 3
    ):
        return False
    counter = loop.target.id
    return any(
        isinstance(node, ast.Slice) and node.lower is not None and counter in names_in(node.lower)
        for node in own
    )


def is_step_function(func: FunctionNode) -> bool:
    """A function one call of which is one step: its own body (not its loops) trains or calls the
    model on its batch parameters, or it fetches a batch itself (``batch = next(data)``) and trains
    somewhere in its body (a micro-batch loop over that batch).  A loop calling it once per
    iteration is a step loop (``for b in data: train_step(b)``)."""

    def compute() -> bool:
        params = {a.arg for a in func.args.args if looks_like_batch_param(a.arg)}
        data = propagate_batch_names(func.body, params) if params else set()
        own = list(own_nodes(func.body))
        if any(is_backward_call(n) or is_optimizer_step(n) or (data and is_model_call(n, data)) for n in own):
            return True
        return any(is_batch_fetch(n) for n in own) and trains_anywhere(func)

    return subtree_memo(func, "is_step_function", compute)


def trains_anywhere(func: FunctionNode) -> bool:
    """Whether backward runs or an optimizer steps anywhere in the body, loops included
    (nested definitions excluded)."""

    def compute() -> bool:
        stack: list[ast.AST] = [n for n in func.body if not isinstance(n, SCOPE_NODES)]
        while stack:
            node = stack.pop()
            if is_backward_call(node) or is_optimizer_step(node):
                return True
            stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, SCOPE_NODES))
        return False

    return subtree_memo(func, "trains_anywhere", compute)


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _in_batch_comprehensions(own: list[ast.AST]) -> set[int]:
    """Ids of the nodes inside a comprehension over a loader (``[model(x[i]) for i in IndexLoader(...)]``):
    that comprehension is the loop over batches, so its model calls do not make the enclosing loop
    (``for part in ("val", "test")``) a step loop."""
    inside: set[int] = set()
    for node in own:
        if isinstance(node, _COMPREHENSIONS) and any(is_loader_like(g.iter, set()) for g in node.generators):
            inside.update(id(n) for n in ast.walk(node))
    return inside
