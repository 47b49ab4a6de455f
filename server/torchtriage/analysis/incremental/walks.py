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
from typing import Callable, Hashable, Sequence, TypeVar

from .levels import CONTAINERS, child_nodes, flatten, levels_of
from .memo import keyed_memo, subtree_memo

__all__ = ["scope_any", "scope_entries", "scope_walk", "subtree"]

T = TypeVar("T")


def scope_walk(node: ast.AST, skip: tuple[type, ...]) -> list[ast.AST]:
    """``node`` and its descendants, last child first, not entering ``skip`` nodes below it."""
    if isinstance(node, CONTAINERS):
        return [node, *_kept_walk(node, skip)]
    nodes: list[ast.AST] = []
    _walk_plain(node, skip, nodes)
    return nodes


def _walk_plain(node: ast.AST, skip: tuple[type, ...], nodes: list[ast.AST]) -> None:
    stack = [node]
    while stack:
        current = stack.pop()
        nodes.append(current)
        stack.extend([child for child in child_nodes(current) if not isinstance(child, skip)])


def _kept_walk(node: ast.AST, skip: tuple[type, ...]) -> list[ast.AST]:
    """The walk below a container, kept on it (without the container itself, so that a replaced
    statement is freed at once rather than by the cycle collector).  Read-only."""
    return subtree_memo(node, ("scope_walk", skip), lambda: _walk_below(node, skip))


def _walk_below(node: ast.AST, skip: tuple[type, ...]) -> list[ast.AST]:
    nodes: list[ast.AST] = []
    for child in reversed([c for c in child_nodes(node) if not isinstance(c, skip)]):
        if isinstance(child, CONTAINERS):
            nodes.append(child)
            nodes.extend(_kept_walk(child, skip))
        else:
            _walk_plain(child, skip, nodes)
    return nodes


Entries = Callable[[ast.AST], Sequence[T]]


def scope_entries(node: ast.AST, key: Hashable, skip: tuple[type, ...], entries: Entries[T]) -> list[T]:
    """``entries(n)`` for every ``n`` of :func:`scope_walk` in order, concatenated; what lies
    below a statement is kept on it under ``key`` (one key per ``entries`` function and ``skip``).
    ``entries`` must look at its node's own subtree only (see :mod:`.memo`)."""
    found: list[T] = []
    _add_entries(node, key, skip, entries, found)
    return found


def _add_entries(node: ast.AST, key: Hashable, skip: tuple[type, ...], entries: Entries[T], found: list[T]) -> None:
    if isinstance(node, ast.stmt):  # (every statement: a 740-line function has ~100 simple ones)
        own = entries(node)
        if own:
            found.extend(own)
        found.extend(_kept_entries(node, key, skip, entries))
        return
    stack = [node]
    while stack:
        current = stack.pop()
        own = entries(current)
        if own:
            found.extend(own)
        stack.extend([child for child in child_nodes(current) if not isinstance(child, skip)])


def _kept_entries(node: ast.AST, key: Hashable, skip: tuple[type, ...], entries: Entries[T]) -> list[T]:
    """The entries below a statement, kept on it (see :func:`_kept_walk`).  Read-only."""

    def below() -> list[T]:
        found: list[T] = []
        for child in reversed([c for c in child_nodes(node) if not isinstance(c, skip)]):
            _add_entries(child, key, skip, entries, found)
        return found

    return subtree_memo(node, key, below)


def scope_any(
    node: ast.AST, key: Hashable, skip: tuple[type, ...], test: Callable[[ast.AST], bool], context: Hashable = ()
) -> bool:
    """Whether ``test`` holds for some node of :func:`scope_walk`; the answer for each statement
    is kept on it under ``key`` while ``context`` (what ``test`` reads beyond the node's own
    subtree, e.g. the module's imports) stays the same."""
    if test(node):
        return True
    if isinstance(node, CONTAINERS):
        return keyed_memo(
            node,
            key,
            context,
            lambda: any(
                scope_any(child, key, skip, test, context) for child in child_nodes(node) if not isinstance(child, skip)
            ),
        )
    return any(scope_any(child, key, skip, test, context) for child in child_nodes(node) if not isinstance(child, skip))


def subtree(node: ast.AST) -> list[ast.AST]:
    """``ast.walk(node)`` as a list, breadth first, without the ``Load``/``Store``/``Del``
    markers; for a statement, read from the walk order kept on it (:mod:`.levels`)."""
    if isinstance(node, CONTAINERS):
        return flatten(levels_of(node, {}))
    return [child for child in ast.walk(node) if not isinstance(child, ast.expr_context)]
