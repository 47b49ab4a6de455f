"""Loaders consumed through generators and iterator wrappers, for the loader rules.

* a *batch generator* is a function of the module that yields while iterating a
  parameter (``def infinite(loader): while True: yield from loader``, ``for b in dl:
  yield b``) or a DataLoader it builds itself; it *repeats* when that iteration sits
  inside another loop of the generator, so every pass over the data restarts the
  loader's workers;
* an *iterator alias* is a name bound to something that iterates a loader
  (``it = cycle(loader)``, ``self.dl = infinite(dl)``, ``prefetcher = Prefetcher(loader)``):
  a step loop that calls ``next(it)`` or iterates ``it`` reads the loader.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..hotloops.step_markers import SCOPE_NODES, unwrap_iterable
from ..syntax import bound_name

if TYPE_CHECKING:
    from .base import RuleContext

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_ITERATOR_BUILDERS = frozenset({"iter", "cycle", "repeat", "chain", "enumerate", "tqdm"})  # tqdm: a progress bar over it
_WRAPPER_NAME = re.compile(r"prefetch|loader|iter|cycle|infinite|repeat|endless|forever", re.I)


@dataclass(frozen=True)
class BatchGenerator:
    func: FunctionNode
    iterated: str  # the parameter (or local loader variable) it yields from
    repeats: bool  # that iteration is inside another loop of the generator


def _own_nodes(func: FunctionNode) -> list[ast.AST]:
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPE_NODES):
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _generator_of(ctx: "RuleContext", func: FunctionNode) -> BatchGenerator | None:
    own = _own_nodes(func)
    if not any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own):
        return None
    for node in own:
        source: ast.AST | None = None
        if isinstance(node, ast.YieldFrom):
            source = node.value
        elif isinstance(node, (ast.For, ast.AsyncFor)) and any(
            isinstance(n, (ast.Yield, ast.YieldFrom)) for stmt in node.body for n in ast.walk(stmt)
        ):
            source = node.iter
        name = bound_name(unwrap_iterable(source)) if source is not None else None
        if name is None:
            continue
        outer = any(
            isinstance(a, (ast.For, ast.AsyncFor, ast.While)) and a is not node
            for a in _ancestors_until(ctx, node, func)
        )
        return BatchGenerator(func, name, outer)
    return None


def _ancestors_until(ctx: "RuleContext", node: ast.AST, stop: ast.AST) -> list[ast.AST]:
    found = []
    for ancestor in ctx.ancestors(node):
        if ancestor is stop:
            break
        found.append(ancestor)
    return found


def batch_generators(ctx: "RuleContext") -> dict[str, BatchGenerator]:
    """Plain functions of the module that yield what they iterate, by name (memoised)."""
    key = ("batch-generators",)
    found = ctx.memo.get(key)
    if found is None:
        found = {}
        if "yield" in ctx.source:
            for name, functions in ctx.functions.items():
                for func in functions:
                    if isinstance(ctx.parents.get(func), ast.ClassDef):
                        continue
                    generator = _generator_of(ctx, func)
                    if generator is not None:
                        found[name] = generator
        ctx.memo[key] = found
    return found  # type: ignore[return-value]


def _param_position(func: FunctionNode, name: str) -> int | None:
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args] if a.arg not in ("self", "cls")]
    return params.index(name) if name in params else None


def iterator_aliases(ctx: "RuleContext") -> dict[str, list[str]]:
    """Loader name -> names bound to an iterator over it (``it = cycle(loader)``), memoised."""
    key = ("iterator-aliases",)
    found = ctx.memo.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    aliases: dict[str, list[str]] = {}
    generators = batch_generators(ctx)
    for node in ctx.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        value = node.value
        if not (isinstance(value, ast.Call) and value.args and len(node.targets) == 1):
            continue
        alias = bound_name(node.targets[0])
        callee = bound_name(value.func)
        if alias is None or callee is None:
            continue
        position = 0
        generator = generators.get(callee)
        if generator is not None:
            position = _param_position(generator.func, generator.iterated)  # type: ignore[assignment]
        elif callee not in _ITERATOR_BUILDERS and not _WRAPPER_NAME.search(callee):
            continue
        if position is None or position >= len(value.args):
            continue
        source = bound_name(value.args[position])
        if source is not None and source != alias:
            aliases.setdefault(source, []).append(alias)
    ctx.memo[key] = aliases
    return aliases


def fetches_from(loop: ast.AST, name: str) -> bool:
    """Whether a loop's body takes items with ``next(name)`` / ``next(self.name)``, or with the iterator's
    ``name.next()`` (DataLoader iterators kept Python 2's spelling until torch 1.13; older code calls it)."""
    for node in ast.walk(loop):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "next" and node.args and bound_name(node.args[0]) == name:
            return True
        if isinstance(func, ast.Attribute) and func.attr == "next" and not node.args and bound_name(func.value) == name:
            return True
    return False


def repeating_generator(ctx: "RuleContext", creation: ast.Call, name: str | None) -> str | None:
    """The generator that re-iterates this loader on every pass over the data, if any: the one
    it is built in (``loader = DataLoader(...); while True: yield from loader``) or one it is
    handed to (``for batch in infinite(loader)``, ``it = cycle(loader)``)."""
    if name is None:
        return None
    generators = batch_generators(ctx)
    if not generators:
        return None
    home = ctx.enclosing_function(creation)
    for generator in generators.values():
        if generator.repeats and generator.func is home and generator.iterated == name:
            return generator.func.name
    for call in ctx.nodes_of(ast.Call):
        assert isinstance(call, ast.Call)
        generator = generators.get(bound_name(call.func) or "")
        if generator is None or not generator.repeats:
            continue
        position = _param_position(generator.func, generator.iterated)
        if position is not None and position < len(call.args) and bound_name(call.args[position]) == name:
            return generator.func.name
    return None
