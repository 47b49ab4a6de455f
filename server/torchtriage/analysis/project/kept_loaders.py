"""Loaders a project class keeps and reads in its own step loops.

Training code often hands its loaders to a trainer object and lets that object's methods iterate them::

    # main.py                                   # solver.py
    loader = get_loader(config)                 class Solver:
    solver = Solver(loader, config)                 def __init__(self, loader, config):
    solver.train()                                      self.loader = loader
                                                    def train(self):
                                                        data_loader = self.loader
                                                        data_iter = iter(data_loader)
                                                        for i in range(num_iters):
                                                            x, y = next(data_iter)

A loader passed to a project class's constructor, which ``__init__`` stores on ``self`` under a name
(as it is, or as an entry of a dict passed in: ``self.tr_loader = data['tr_loader']``), is read by a
step loop of one of the class's methods that iterates that attribute (``for b in self.loader``), a
local name bound to it (``data_loader = self.loader``, also as one branch of a conditional
expression) or to a progress bar over it (``t = tqdm(self.loader)``), or takes items with ``next()``
from an iterator over one of them (``it = iter(data_loader)``).  Iterating it in a loop nested in
another loop of the method restarts its workers every epoch; taking items from an iterator does not
say how often the iterator is rebuilt.  :class:`Keeper` reads the class and its ``__init__`` once per
constructor call; :func:`class_read` judges the class's loops (also for a factory's loader the class
keeps itself, ``self.train_loader = make_loader(...)``, :mod:`.returned_loaders`).  Nothing is executed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

from ..hotloops.finder import HotLoops
from ..hotloops.step_markers import LOOP_NODES, SCOPE_NODES
from ..syntax import assignment_history
from .call_graph import CallGraph
from .modules import FunctionNode, ProjectModule

_ITERATORS = frozenset({"iter", "cycle", "enumerate"})  # calls that make an iterator over their first argument


@dataclass(frozen=True)
class KeptRead:
    """A step loop of the keeping class that reads the loader."""

    where: str  # "solver.py:212", the step loop
    moves_to_device: bool  # that step loop copies its batches to a device
    every_epoch: bool  # the loop iterates the loader inside another loop of its method


def kept_read(graph: CallGraph, hot_of: Callable[[ProjectModule], HotLoops], module: ProjectModule, call: ast.Call,
              passed: list[int], keywords: list[str]) -> KeptRead | None:
    """How the project class ``call`` constructs reads the loader passed at argument positions ``passed``
    or keywords ``keywords``: an every-epoch iteration if there is one, else the first read; None when
    ``call`` makes no project class, or the class does not keep the loader or read it in a step loop."""
    made = keeper(graph, module, call)
    if made is None:
        return None
    kept = made.attributes({made.params[i] for i in passed if i < len(made.params)} | set(keywords), None)
    return class_read(made.owner, made.cls, kept, hot_of(made.owner)) if kept else None


@dataclass(frozen=True)
class Keeper:
    """The project class a constructor call makes, its ``__init__``'s parameters (after ``self``) and what that
    ``__init__`` keeps on ``self``: (parameter, key or None) -> the attributes (``self.tr_loader = data['tr_loader']``)."""

    owner: ProjectModule
    cls: ast.ClassDef
    params: list[str]
    bindings: dict[tuple[str, str | None], list[str]]

    def attributes(self, params: set[str], key: str | None) -> frozenset[str]:
        """The attributes ``__init__`` binds to one of ``params`` as it is, or with ``key`` to that entry of one."""
        return frozenset(attr for param in params for attr in self.bindings.get((param, key), ()))

    def keys(self, param: str) -> set[str]:
        """The entries of ``param`` (a dict) that ``__init__`` keeps."""
        return {key for name, key in self.bindings if name == param and key is not None}


def keeper(graph: CallGraph, module: ProjectModule, call: ast.Call) -> Keeper | None:
    """The :class:`Keeper` of the project class ``call`` constructs, if it has an ``__init__`` of its own."""
    found = graph.table.resolve_dotted(module, call.func)
    if not (isinstance(found, tuple) and isinstance(found[1], ast.ClassDef)):
        return None
    owner, cls = found[0], found[1]
    init = owner.method(cls, "__init__")
    if init is None or owner.ctx is None:
        return None
    bindings = graph.memo.get(("init-bindings", init))
    if bindings is None:
        bindings = graph.memo[("init-bindings", init)] = _init_bindings(init)
    params = [a.arg for a in [*init.args.posonlyargs, *init.args.args]][1:]  # after ``self``
    return Keeper(owner, cls, params, bindings)  # type: ignore[arg-type]


def class_read(owner: ProjectModule, cls: ast.ClassDef, kept: frozenset[str], hot: HotLoops) -> KeptRead | None:
    """How the step loops of ``cls``'s methods read the loader it keeps in one of the ``kept`` attributes: an
    every-epoch iteration if there is one, else the first read, else None."""
    from ..rules._loaders import moves_data_to_device

    assert owner.ctx is not None
    first: KeptRead | None = None
    for region in hot.step_loops:
        loop = region.node
        method = owner.ctx.enclosing_function(loop)
        if method is None or owner.ctx.enclosing_class(loop) is not cls:
            continue
        names, iterators = _readers(method, kept)
        iterated = isinstance(loop, (ast.For, ast.AsyncFor)) and iterates(loop.iter, names)
        if not iterated and not _fetches(loop, iterators):
            continue
        every_epoch = iterated and each_epoch(owner, loop)
        read = KeptRead(f"{owner.label}:{loop.lineno}", moves_data_to_device(owner.ctx, [region], hot), every_epoch)
        if every_epoch:
            return read
        first = first or read
    return first


def _init_bindings(init: FunctionNode) -> dict[tuple[str, str | None], list[str]]:
    """(name, key or None) -> the ``self`` attributes ``__init__`` assigns ``name`` (or ``name[key]``) to."""
    found: dict[tuple[str, str | None], list[str]] = {}
    for node in ast.walk(init):
        if not isinstance(node, ast.Assign):
            continue
        value = node.value
        if isinstance(value, ast.Name):
            source: tuple[str, str | None] = (value.id, None)
        elif isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and isinstance(value.slice, ast.Constant) \
                and isinstance(value.slice.value, str):
            source = (value.value.id, value.slice.value)
        else:
            continue
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.setdefault(source, []).append(target.attr)
    return found


def _is_kept(node: ast.AST, kept: frozenset[str]) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in kept and isinstance(node.value, ast.Name) and node.value.id == "self"


def _readers(method: FunctionNode, kept: frozenset[str]) -> tuple[set[str], set[str]]:
    """In ``method``: the names that read a kept loader (``self.loader``; a local bound to it, ``data_loader =
    self.loader`` or ``self.a if train else self.b``, or to a progress bar over one, ``t = tqdm(self.loader)``),
    and the locals bound to an iterator over one (``data_iter = iter(data_loader)``)."""
    bound = [(name, value) for name, values in assignment_history(method).items() for _, value in values]
    names = {name for name, value in bound
             if any(_is_kept(branch, kept) for branch in ([value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]))}
    names |= {f"self.{attr}" for attr in kept}
    names |= {name for name, value in bound if isinstance(value, ast.Call) and iterates(value, names)}  # ``t = tqdm(self.loader)``
    iterators = {name for name, value in bound if isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                 and value.func.id in _ITERATORS and value.args and _spelled(value.args[0]) in names}
    return names, iterators


def _is_name_in(node: ast.AST, names: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def _spelled(node: ast.AST) -> str | None:
    """``loader`` or ``self.loader`` as written; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


def iterates(iterable: ast.expr, names: set[str]) -> bool:
    """``for b in names``, ``enumerate(tqdm(name))``: the name, or the first argument of wrapping calls."""
    node: ast.AST = iterable
    for _ in range(4):
        if _spelled(node) in names:
            return True
        if not (isinstance(node, ast.Call) and node.args):
            return False
        node = node.args[0]
    return _spelled(node) in names


def _fetches(loop: ast.AST, iterators: set[str]) -> bool:
    """Whether the loop takes an item with ``next(it)`` from one of the iterators."""
    return bool(iterators) and any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "next" and node.args
        and _is_name_in(node.args[0], iterators) for node in ast.walk(loop)
    )


def each_epoch(module: ProjectModule, node: ast.AST, built: ast.AST | None = None) -> bool:
    """``node`` runs in a loop of its own function that does not contain the factory call ``built`` (so the loader
    outlives each pass); without ``built``, in any loop of its function (an epoch loop around a step loop)."""
    assert module.ctx is not None
    for ancestor in module.ctx.ancestors(node):
        if isinstance(ancestor, SCOPE_NODES):
            return False
        if isinstance(ancestor, LOOP_NODES) and (built is None or not any(a is ancestor for a in module.ctx.ancestors(built))):
            return True
    return False
