"""Results cached on the ast node they were computed from, so they survive edits elsewhere.

An incremental re-parse (see :mod:`.incremental`) keeps the node objects of
every chunk an edit did not touch; only their line numbers move.  A result
that depends on nothing but a node's own subtree, and holds nodes or names
rather than positions, is therefore still right for the next version of the
file, and is worth keeping on the node itself.  Never cache anything here that
depends on other parts of the module (imports, hot loops, other functions).
"""

from __future__ import annotations

import ast
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")

_SLOT = "_torchtriage_memo"


def subtree_memo(node: ast.AST, key: str, compute: Callable[[], T]) -> T:
    """``compute()``, cached on ``node`` under ``key``; it must depend on ``node``'s subtree only."""
    memo: dict[str, object] | None = node.__dict__.get(_SLOT)
    if memo is None:
        memo = {}
        setattr(node, _SLOT, memo)
    try:
        return memo[key]  # type: ignore[return-value]
    except KeyError:
        value = memo[key] = compute()
        return value


def forget(node: ast.AST) -> None:
    """Drop what was cached on ``node``: its subtree changed (an edit replaced statements below it)."""
    node.__dict__.pop(_SLOT, None)


def keyed_memo(node: ast.AST, slot: str, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, kept on ``node`` under ``slot`` while ``key`` stays the same (one value per
    slot: a new key replaces the old value).  ``compute`` must depend only on ``node``'s subtree
    and on what ``key`` holds; put ``node.lineno`` in the key when the value holds positions
    (an edit above the node moves them)."""
    memo: dict[str, object] | None = node.__dict__.get(_SLOT)
    if memo is None:
        memo = {}
        setattr(node, _SLOT, memo)
    kept = memo.get(slot)
    if kept is not None and kept[0] == key:  # type: ignore[index]
        return kept[1]  # type: ignore[index, return-value]
    value = compute()
    memo[slot] = (key, value)
    return value
