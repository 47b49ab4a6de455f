"""Walks over a subtree, kept on the statements they cover so an edit re-walks only what changed.

Rules walk the same functions again on every analysis: "every call in this
function, not entering nested functions", "every name this scope binds".  After
an edit inside a 740-line ``main()`` only a few statements are new
(:mod:`.nested`); a walk of ``main()`` is the walks of its statements laid end to
end, so keeping each statement's walk on the statement (:mod:`.memo`, forgotten
with the statement's subtree) makes the next walk of ``main()`` a few list
copies plus a walk of the new statements.

:func:`scope_walk` lists nodes in the order of the stack walk the rules use
(``own_walk``): a node, then its children's walks from the last child to the
first, not entering children of the ``skip`` types.  :func:`scope_entries`
gives, in that same order, what a function says about each node (the names an
assignment binds ...), kept per statement too; that function must look at the
node's own subtree only.
"""

from __future__ import annotations

import ast
from typing import Callable, Hashable, Iterable, TypeVar

from .levels import CONTAINERS, flatten, levels_of
from .memo import subtree_memo

__all__ = ["scope_entries", "scope_walk", "subtree"]

T = TypeVar("T")
_iter_child_nodes = ast.iter_child_nodes


def scope_walk(node: ast.AST, skip: tuple[type, ...]) -> list[ast.AST]:
    """``node`` and its descendants, last child first, not entering ``skip`` nodes below it."""
    if isinstance(node, CONTAINERS):
        return [node, *_kept_walk(node, skip)]
    nodes: list[ast.AST] = []
    stack = [node]
    while stack:
        current = stack.pop()
        nodes.append(current)
        stack.extend(child for child in _iter_child_nodes(current) if not isinstance(child, skip))
    return nodes


def _kept_walk(node: ast.AST, skip: tuple[type, ...]) -> list[ast.AST]:
    """The walk below a container, kept on it (without the container itself, so that a replaced
    statement is freed at once rather than by the cycle collector).  Read-only."""
    return subtree_memo(node, ("scope_walk", skip), lambda: _walk_below(node, skip))


def _walk_below(node: ast.AST, skip: tuple[type, ...]) -> list[ast.AST]:
    nodes: list[ast.AST] = []
    for child in reversed([c for c in _iter_child_nodes(node) if not isinstance(c, skip)]):
        if isinstance(child, CONTAINERS):
            nodes.append(child)
            nodes.extend(_kept_walk(child, skip))
        else:
            nodes.extend(scope_walk(child, skip))
    return nodes


def scope_entries(
    node: ast.AST, key: Hashable, skip: tuple[type, ...], entries: Callable[[ast.AST], Iterable[T]]
) -> list[T]:
    """``entries(n)`` for every ``n`` of :func:`scope_walk` in order, concatenated; what lies
    below a statement is kept on it under ``key`` (one key per ``entries`` function and ``skip``)."""
    if isinstance(node, CONTAINERS):
        return [*entries(node), *_kept_entries(node, key, skip, entries)]
    found: list[T] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.extend(entries(current))
        stack.extend(child for child in _iter_child_nodes(current) if not isinstance(child, skip))
    return found


def _kept_entries(
    node: ast.AST, key: Hashable, skip: tuple[type, ...], entries: Callable[[ast.AST], Iterable[T]]
) -> list[T]:
    """The entries below a container, kept on it (see :func:`_kept_walk`).  Read-only."""

    def below() -> list[T]:
        found: list[T] = []
        for child in reversed([c for c in _iter_child_nodes(node) if not isinstance(c, skip)]):
            found.extend(scope_entries(child, key, skip, entries))
        return found

    return subtree_memo(node, key, below)


def subtree(node: ast.AST) -> list[ast.AST]:
    """``ast.walk(node)`` as a list, breadth first, without the ``Load``/``Store``/``Del``
    markers; for a statement, read from the walk order kept on it (:mod:`.levels`)."""
    if isinstance(node, CONTAINERS):
        return flatten(levels_of(node, {}))
    return [child for child in ast.walk(node) if not isinstance(child, ast.expr_context)]
