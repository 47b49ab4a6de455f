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

from .base import RuleContext
from ..incremental.memo import keyed_memo
from ..hotloops.finder import is_backward_call, is_optimizer_step
from ..hotloops.step_markers import is_rare_guard, target_names
from ..module_index import may_end_in
from ._helpers import method_name
from ._steplog import CLOCK_CALLS
from ._steps import OWN_SCOPES, own_walk

CLOCKS = CLOCK_CALLS  # (one list of clock reads, shared with TT104)
_CLOCK_LASTS = frozenset(name.rsplit(".", 1)[-1] for name in CLOCKS)
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
    carried: bool = False  # the opening runs after the read, in the previous iteration of a loop


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


def _is_sync(ctx: RuleContext, node: ast.AST) -> bool:
    if method_name(node) in _SYNC_METHODS:
        return True
    # torch.cuda.synchronize(), torch.accelerator.synchronize(), a local ``synchronize_fn()``: the
    # qualname's last part is the method's own name, or what an imported name stands for
    func = getattr(node, "func", None)
    if isinstance(func, ast.Attribute) and "synchronize" not in func.attr:
        return False
    if isinstance(func, ast.Name) and "synchronize" not in ctx.aliases.get(func.id, func.id).rsplit(".", 1)[-1]:
        return False
    return "synchronize" in (ctx.call_qualname(node) or "").rsplit(".", 1)[-1]


def syncing_functions(ctx: RuleContext) -> set[str]:
    """Functions of this file whose own body synchronises (``return loss.item(), acc``), and the other
    project files' such functions it imports.

    Read from the module's calls up, not from each function down: a sync call belongs to the innermost
    function, class or lambda around it (what :func:`own_walk` would not enter), and few calls sync."""
    own: set[str] = set()
    for call in ctx.nodes_of(ast.Call):
        if not _is_sync(ctx, call):
            continue
        scope = next((a for a in ctx.ancestors(call) if isinstance(a, OWN_SCOPES)), None)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own.add(scope.name)
    return own | set(ctx.syncing_imports)  # and the project's, imported (``evaluate_network`` from train/...)


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

    def __init__(self, ctx: RuleContext, scope: ast.AST, syncing: set[str]) -> None:
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
                later, earlier = clock_key(ctx, node.left), clock_key(ctx, node.right)
                if later is not None and earlier is not None:
                    self.differences.append((later, earlier))
        for node in nodes:  # clock names, including rolling ``t0 = t1`` and ``self.t_prev = now``
            name = assigned_clock_key(ctx, node)
            if name is not None and (ctx.call_qualname(node.value) or "") in CLOCKS:  # type: ignore[attr-defined]
                self.clock_names.add(name)
                self.assigned.setdefault(name, []).append(node)  # type: ignore[arg-type]
        for node in nodes:
            name = assigned_clock_key(ctx, node)
            if name is not None and clock_key(ctx, node.value) in self.clock_names:  # type: ignore[attr-defined]
                self.assigned.setdefault(name, []).append(node)  # type: ignore[arg-type]
                if "." in name:  # ``self.t_prev = now``: the attribute keeps a reading from here on
                    self.clock_names.add(name)


def clock_key(ctx: RuleContext, node: ast.AST) -> str | None:
    """``t0`` for a name, ``self.t_prev`` for an attribute: how a clock reading is kept."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return ctx.dotted(node)
    return None


def assigned_clock_key(ctx: RuleContext, node: ast.AST) -> str | None:
    """The key of ``x`` in a single-target ``x = ...``."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return clock_key(ctx, node.targets[0])
    return None


class _Scope:
    """Clock reads, openings, work and syncs of one function (or the module), in order."""

    def __init__(self, ctx: RuleContext, scope: ast.AST, syncing: set[str]) -> None:
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
            earlier = clock_key(self.ctx, parent.right)
            if earlier in self.clock_names:
                return earlier
        mine = assigned_clock_key(self.ctx, parent) if parent is not None else None
        if mine is not None:
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

    def _loop_carried(self, read: ast.Call, name: str) -> tuple[ast.stmt, ast.AST] | None:
        """An attribute clock (``self.t_prev = now``) set after the read in the loop around it: the
        reading it is compared with was taken in the previous iteration."""
        if "." not in name:
            return None  # a plain name read before any assignment is a NameError, not a timing
        loop = next((a for a in self.ctx.ancestors(read) if isinstance(a, (ast.For, ast.While))), None)
        if loop is None:
            return None
        inside = set(map(id, ast.walk(loop)))
        later = [s for s in self.assigned.get(name, []) if id(s) in inside and _pos(s) > _pos(read)]
        if not later or any(id(call) in inside for call in self.sync_calls):
            return None
        return later[-1], loop

    def unsynced(self) -> Iterator[UnsyncedTiming]:
        for read, clock in self.reads:
            name = self.opening_name(read)
            if name is None:
                continue
            before = [s for s in self.assigned.get(name, []) if _end(s) <= _pos(read)]
            carried = not before
            if before:
                opening = max(before, key=_end)
                start, stop = _end(opening), _pos(read)
            else:  # ``self.t_prev`` set later in the loop around the read: the interval wraps around
                found = self._loop_carried(read, name)
                if found is None:
                    continue
                opening, loop = found
                start, stop = _pos(loop), _end(loop)
            work = [p for p in self.work if start <= p <= stop]
            if not work:
                continue
            if not carried and (self._times_whole_training_loops(read, start, stop) or self._since_before_the_loop(read, name)):
                continue
            if any(max(work) <= p <= stop for p in self._syncs_run_with(read)) or self._synced_every_iteration(read):
                continue
            yield UnsyncedTiming(read, clock, opening, carried)

    def _times_whole_training_loops(self, read: ast.Call, start: Position, stop: Position) -> bool:
        """A read outside any loop that times whole training loops (``t0`` before the epoch loop, ``hours``
        after it): what may still be queued at the read is at most the last step's work, a rounding
        error on a run or an epoch, not the per-step error the rule is about."""
        if any(isinstance(a, (ast.For, ast.AsyncFor, ast.While)) for a in self._ancestors_in_scope(read)):
            return False  # per epoch or per step: a loop of gradient accumulation inside one step is a step loop too
        hot = self.ctx.hot
        loops = [region.node for region in hot.step_loops if region.trains] + list(hot.epoch_loops)
        return any(start <= _pos(loop) and _end(loop) <= stop for loop in loops)

    def _since_before_the_loop(self, read: ast.Call, name: str) -> bool:
        """A read in a loop compared with a reading taken once before it and never again inside it
        (``eta = (time.time() - start_time) / iteration * left``), or again only in a rare branch the read is not
        in: the time since the loop began (or since that branch last ran), over many iterations; what may still be
        queued is a step's work, not each step's error."""
        loop = next((a for a in self._ancestors_in_scope(read) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))), None)
        if loop is None:
            return False
        inside = set(map(id, ast.walk(loop)))
        restarts = [s for s in self.assigned.get(name, []) if id(s) in inside]
        if not restarts:
            return True
        # or restarted only now and then, in a rare branch the read is not in (``t0`` taken again after each
        # synchronised validation, read every step as ``training_time + (now - t0)``): the time since then
        counters = target_names(loop.target, loop.iter)[1] if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
        around_read = set(map(id, self._ancestors_in_scope(read)))
        return all(self._in_a_rare_branch(restart, loop, around_read, counters) for restart in restarts)

    def _in_a_rare_branch(self, node: ast.AST, loop: ast.AST, around_read: set[int], counters: set[str]) -> bool:
        """``node`` is in the body of an ``if`` inside ``loop`` that holds only on some iterations
        (:func:`..hotloops.step_markers.is_rare_guard`) and does not hold the read too."""
        child = node
        for ancestor in self.ctx.ancestors(node):
            if ancestor is loop:
                return False
            if isinstance(ancestor, ast.If) and id(ancestor) not in around_read and any(child is stmt for stmt in ancestor.body) \
                    and is_rare_guard(ancestor.test, counters):
                return True
            child = ancestor
        return False

    def _ancestors_in_scope(self, node: ast.AST) -> Iterator[ast.AST]:
        """The ancestors of ``node`` inside its own function (or module)."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
                return
            yield ancestor

    def _syncs_run_with(self, read: ast.Call) -> list[Position]:
        """The syncs that run whenever ``read`` does: not those in the body of a rare guard the read is not
        in too (``if step % eval_every == 0: validate()`` ends the interval only on the steps it lets through)."""
        rare = {id(guard) for guard in self.ctx.hot.rare_guards}
        if not rare:
            return self.syncs
        around_read = self._rare_bodies_around(read, rare)
        return [position for position, call in zip(self.syncs, self.sync_calls) if self._rare_bodies_around(call, rare) <= around_read]

    def _rare_bodies_around(self, node: ast.AST, rare: set[int]) -> set[int]:
        """The rare guards whose body holds ``node``."""
        found, child = set(), node
        for ancestor in self.ctx.ancestors(node):
            if id(ancestor) in rare and any(child is stmt for stmt in ancestor.body):  # type: ignore[attr-defined]
                found.add(id(ancestor))
            child = ancestor
        return found


def unsynced_timings(ctx: RuleContext) -> Iterator[UnsyncedTiming]:
    """Every unsynchronised timing of CUDA work in the module."""
    if "time" not in ctx.source:
        return
    scopes: dict[int, ast.AST] = {}
    clock_names = ctx.names_ending_in(_CLOCK_LASTS)
    for node in ctx.nodes_of(ast.Call):  # only scopes that read a clock are worth a closer look
        if may_end_in(node.func, _CLOCK_LASTS, clock_names):  # type: ignore[attr-defined]
            if (ctx.call_qualname(node) or "") in CLOCKS:
                scope = ctx.enclosing_function(node) or ctx.tree
                scopes.setdefault(id(scope), scope)
    if not scopes:
        return
    syncing = syncing_functions(ctx)
    for scope in scopes.values():
        yield from _Scope(ctx, scope, syncing).unsynced()


def torch_alias(ctx: RuleContext) -> str | None:
    """The local name bound to the ``torch`` module, if the file imports it."""
    if ctx.aliases.get("torch") == "torch":
        return "torch"
    for local, qualified in ctx.aliases.items():
        if qualified == "torch":
            return local
    return None
