"""Wall-clock timings of CUDA work, for TT402.

A *closing read* is a clock call whose value is compared with an earlier
reading: ``time.time() - t0``, or ``t1 = time.time()`` followed somewhere by
``t1 - t0``.  Its *opening* is the last assignment of ``t0`` before it
(``t0 = time.time()`` or a rolling ``t0 = t1``).  The timing is unsynchronised
when CUDA work (a model call, ``backward()``, an optimizer step) lies between
the two and no synchronising call (``torch.cuda.synchronize()``, an event's
``synchronize()``, or an implicit sync such as ``.item()``) follows the last
piece of work.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterator

from ..context import ModuleContext
from ..memo import keyed_memo
from ..hotloops import is_backward_call, is_optimizer_step
from ._helpers import method_name
from ..walks import scope_any
from ._steps import OWN_SCOPES, own_walk

CLOCKS = frozenset(
    {
        "time.time", "time.perf_counter", "time.monotonic", "time.time_ns", "time.perf_counter_ns",
        "time.monotonic_ns", "timeit.default_timer",
    }
)
_SYNC_METHODS = frozenset({"synchronize", "item", "tolist", "cpu", "numpy"})
_MODEL = re.compile(
    r"^(self|model|net|network|module|ddp_model|raw_model|\w+_model|model_\w+|classifier|generator|discriminator|"
    r"encoder|decoder|policy|backbone|teacher|student)$",
    re.I,
)
_NOT_COMPUTE = frozenset({"to", "cuda", "cpu", "train", "eval", "parameters", "named_parameters", "state_dict"})
# ``save_model(...)``, ``build_model(...)``: an operation on a model, not a forward pass.
_MODEL_VERB = re.compile(
    r"^(save|load|build|create|get|init|initialize|make|setup|prepare|print|log|export|wrap|unwrap|freeze|"
    r"unfreeze|count|register|summarize|describe|convert|compile)_",
    re.I,
)

Position = tuple[int, int]


@dataclass(frozen=True)
class UnsyncedTiming:
    """A closing clock read with CUDA work since its opening and no sync after the work."""

    read: ast.Call
    clock: str
    opening: ast.stmt


def _pos(node: ast.AST) -> Position:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _end(node: ast.AST) -> Position:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def is_cuda_work(node: ast.AST) -> bool:
    """A model call, ``backward()``, an optimizer step or ``generate()``."""
    if not isinstance(node, ast.Call):
        return False
    if is_backward_call(node) or is_optimizer_step(node) or method_name(node) == "generate":
        return True
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _NOT_COMPUTE:
        return False
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return bool(_MODEL.match(name)) and not _MODEL_VERB.match(name)


def _is_sync(ctx: ModuleContext, node: ast.AST) -> bool:
    if method_name(node) in _SYNC_METHODS:
        return True
    # torch.cuda.synchronize(), torch.accelerator.synchronize(), a local ``synchronize_fn()``
    return "synchronize" in (ctx.call_qualname(node) or "").rsplit(".", 1)[-1]


def syncing_functions(ctx: ModuleContext) -> set[str]:
    """Functions of this file whose own body synchronises (``return loss.item(), acc``)."""
    def syncs(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and _is_sync(ctx, node)

    return {
        node.name
        for node in ctx.nodes_of((ast.FunctionDef, ast.AsyncFunctionDef))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        # kept per statement while the imports (which _is_sync reads) stay the same
        and scope_any(node, "timing-syncs", OWN_SCOPES, syncs, ctx.aliases_key)
    }


def _callee(node: ast.Call) -> str | None:
    """``test`` in ``test(...)`` and ``self.test(...)``."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return func.attr
    return None


class _ScopeFacts:
    """Clock reads, openings, work and syncs of one scope, in order (kept on the scope node)."""

    def __init__(self, ctx: ModuleContext, scope: ast.AST, syncing: set[str]) -> None:
        self.sync_calls: list[ast.Call] = []
        self.reads: list[tuple[ast.Call, str]] = []
        self.assigned: dict[str, list[ast.stmt]] = {}
        self.clock_names: set[str] = set()
        self.differences: list[tuple[str, str]] = []  # (later, earlier) in ``later - earlier``
        self.work: list[Position] = []
        self.syncs: list[Position] = []
        nodes = list(own_walk(scope))
        for node in nodes:
            qual = ctx.call_qualname(node) if isinstance(node, ast.Call) else None
            if qual in CLOCKS:
                self.reads.append((node, qual.rsplit(".", 1)[-1]))  # type: ignore[arg-type, union-attr]
            elif isinstance(node, ast.Call) and is_cuda_work(node):
                self.work.append(_end(node))
            elif isinstance(node, ast.Call) and (_is_sync(ctx, node) or _callee(node) in syncing):
                self.syncs.append(_end(node))
                self.sync_calls.append(node)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
                if isinstance(node.left, ast.Name) and isinstance(node.right, ast.Name):
                    self.differences.append((node.left.id, node.right.id))
        for node in nodes:  # clock names, including rolling ``t0 = t1``
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                value = node.value
                if (ctx.call_qualname(value) or "") in CLOCKS:
                    self.clock_names.add(name)
                    self.assigned.setdefault(name, []).append(node)
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if isinstance(node.value, ast.Name) and node.value.id in self.clock_names:
                    self.assigned.setdefault(node.targets[0].id, []).append(node)


class _Scope:
    """Clock reads, openings, work and syncs of one function (or the module), in order."""

    def __init__(self, ctx: ModuleContext, scope: ast.AST, syncing: set[str]) -> None:
        self.ctx = ctx
        # What the scope holds depends on its subtree, the imports and the syncing helpers; it
        # holds positions, so the scope's own position is part of the key (see ..memo).
        key = (ctx.aliases_key, frozenset(syncing), getattr(scope, "lineno", 0))
        facts = keyed_memo(scope, "timing-scope", key, lambda: _ScopeFacts(ctx, scope, syncing))
        self.sync_calls = facts.sync_calls
        self.reads = facts.reads
        self.assigned = facts.assigned
        self.clock_names = facts.clock_names
        self.differences = facts.differences
        self.work = facts.work
        self.syncs = facts.syncs

    def opening_name(self, read: ast.Call) -> str | None:
        """The clock name this read is compared with, if it closes a timing."""
        parent = self.ctx.parents.get(read)
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Sub) and parent.left is read:
            if isinstance(parent.right, ast.Name) and parent.right.id in self.clock_names:
                return parent.right.id
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            mine = parent.targets[0].id
            for later, earlier in self.differences:
                if later == mine and earlier != mine and earlier in self.clock_names:
                    return earlier
        return None

    def _synced_every_iteration(self, read: ast.Call) -> bool:
        """A per-step sync in the loop around the read (``losses.update(loss.item())``)
        makes each interval between reads end on a sync: right on average."""
        loop = next((a for a in self.ctx.ancestors(read) if isinstance(a, (ast.For, ast.While))), None)
        if loop is None:
            return False
        inside = set(map(id, ast.walk(loop)))
        return any(id(call) in inside and self.ctx.hot.is_per_step(call) for call in self.sync_calls)

    def unsynced(self) -> Iterator[UnsyncedTiming]:
        for read, clock in self.reads:
            name = self.opening_name(read)
            if name is None:
                continue
            before = [s for s in self.assigned.get(name, []) if _end(s) <= _pos(read)]
            if not before:
                continue
            opening = max(before, key=_end)
            start, stop = _end(opening), _pos(read)
            work = [p for p in self.work if start <= p <= stop]
            if not work:
                continue
            if any(max(work) <= p <= stop for p in self.syncs) or self._synced_every_iteration(read):
                continue
            yield UnsyncedTiming(read, clock, opening)


def unsynced_timings(ctx: ModuleContext) -> Iterator[UnsyncedTiming]:
    """Every unsynchronised timing of CUDA work in the module."""
    if "time" not in ctx.source:
        return
    scopes: dict[int, ast.AST] = {}
    for node in ctx.nodes_of(ast.Call):  # only scopes that read a clock are worth a closer look
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            if (ctx.call_qualname(node) or "") in CLOCKS:
                scope = ctx.enclosing_function(node) or ctx.tree
                scopes.setdefault(id(scope), scope)
    if not scopes:
        return
    syncing = syncing_functions(ctx)
    for scope in scopes.values():
        yield from _Scope(ctx, scope, syncing).unsynced()
