"""Loaders handed around in a literal container: the names a loop reads them by.

Training scripts often keep their loaders side by side and pick one per phase::

    loaders = {"train": train_loader, "val": val_loader}
    for phase in ["train", "val"]:
        for x, y in loaders[phase]: ...

    for loader, split in zip([valid_loader, test_loader], ["validation", "test"]):
        for x, y in loader: ...

``container_aliases`` maps a loader's name to the names such loops read it by:
``loaders[*]`` (any subscript that is not a constant), ``loaders['train']`` (the
constant key it is kept under) and the loop variable that takes each element.
``read_name`` gives the name a loop's iterable reads, in the same spelling.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator

from ..syntax import bound_name

if TYPE_CHECKING:
    from .base import RuleContext

ANY_KEY = "[*]"  # the suffix of a container read with a key that is not a constant


def read_name(node: ast.AST) -> str | None:
    """``loader``, ``self.dl`` -> their bound name; ``loaders['train']`` -> that; ``loaders[phase]`` ->
    ``loaders[*]``; None for anything else."""
    if isinstance(node, ast.Subscript):
        holder = bound_name(node.value)
        if holder is None:
            return None
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return f"{holder}[{key.value!r}]"
        return None if isinstance(key, (ast.Constant, ast.Slice)) else holder + ANY_KEY
    return bound_name(node)


def container_aliases(ctx: "RuleContext") -> dict[str, list[str]]:
    """Name -> the names a loop reads it by when it is kept in a literal dict, list or tuple (memoised)."""
    key = ("loader-container-aliases",)
    found = ctx.memo.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    aliases: dict[str, list[str]] = {}
    for node in ctx.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        holder = bound_name(node.targets[0]) if len(node.targets) == 1 else None
        if holder is not None:
            for name, entry in _entries(node.value):
                aliases.setdefault(name, []).extend([holder + ANY_KEY, *([f"{holder}[{entry!r}]"] if entry else [])])
    for node in ctx.nodes_of(ast.For):
        assert isinstance(node, ast.For)
        for target, elements in _element_targets(node.target, node.iter):
            variable = bound_name(target)
            if variable is not None:
                for name, _ in _entries(elements):
                    aliases.setdefault(name, []).append(variable)
    ctx.memo[key] = aliases
    return aliases


def _entries(value: ast.expr) -> Iterator[tuple[str, str]]:
    """(name, constant key or "") for each bare name a literal dict, list or tuple holds."""
    if isinstance(value, ast.Dict):
        for entry, element in zip(value.keys, value.values):
            name = bound_name(element)
            if name is not None and isinstance(entry, ast.Constant) and isinstance(entry.value, str):
                yield name, entry.value
    elif isinstance(value, (ast.List, ast.Tuple)):
        for element in value.elts:
            name = bound_name(element)
            if name is not None:
                yield name, ""


def _element_targets(target: ast.expr, iterable: ast.expr) -> Iterator[tuple[ast.expr, ast.expr]]:
    """(loop target, literal it takes its elements from): ``for x in [a, b]``, ``for i, x in enumerate([a, b])``,
    ``for x, s in zip([a, b], names)``."""
    if isinstance(iterable, (ast.List, ast.Tuple)):
        yield target, iterable
        return
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and isinstance(target, ast.Tuple)):
        return
    if iterable.func.id == "enumerate" and len(iterable.args) == 1 and len(target.elts) == 2:
        yield from _element_targets(target.elts[1], iterable.args[0])
    elif iterable.func.id == "zip" and len(iterable.args) == len(target.elts):
        for element, argument in zip(target.elts, iterable.args):
            if isinstance(argument, (ast.List, ast.Tuple)):
                yield element, argument
