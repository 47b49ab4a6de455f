"""Results kept on the ast node they were computed from, so they survive edits elsewhere.

An incremental re-parse (:mod:`.incremental`, :mod:`.nested`) keeps the node objects
of every statement an edit did not touch; only their line numbers move.  The
ancestors of the statements it replaced (the function, the loop ... around the edit)
stay the same objects too, with a new subtree: the re-parse calls :func:`forget` on
each of them.  So a result kept on a node is right for the next version of the file
as long as it obeys this contract (rules that keep results must follow it; the
random-edit tests in ``tests/analysis/incremental/`` check the analysis
against a fresh one):

1. **Subtree only.**  ``compute`` reads nothing but ``node`` and its descendants:
   not its parent, not ``ctx.parents``/``ancestors``, not other functions, not the hot
   loops, not the settings or the device.
2. **Or say what else it reads in the key.**  A result that also depends on something
   outside the subtree puts that in the key: ``ctx.aliases_key`` when it resolves names
   through the imports (``ctx.qualname``), a frozenset of the names it was given, ... .
   Use :func:`keyed_memo` (one value per slot, replaced when the key changes).
3. **No positions, or the node's position in the key.**  Line numbers move when an
   edit above adds or removes lines (columns never do).  A result holding positions
   puts ``node.lineno`` in its key (:func:`keyed_memo`); one holding nodes or names
   needs nothing.
4. **No reference back to ``node`` itself** in what is kept (a list of the node's
   walk that starts with the node, an entry naming it): the node would hold a
   cycle, and every replaced statement would wait for a full garbage collection
   (30-130 ms on a long file) instead of being freed at once.  Keep what lies below
   the node and add the node's own part when reading (see :mod:`.walks`).
5. **Treat the value as read-only**; return frozensets or tuples where callers might
   otherwise change it.

Per-analysis results (anything that depends on the whole module or the project) go in
``ctx.memo`` instead, which lives for one analysis.
"""

from __future__ import annotations

import ast
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")

_PREFIX = "_torchtriage_"  # what is kept lives in the node's own attributes under this prefix
_names: dict[Hashable, str] = {}  # memo key -> attribute name (a few dozen keys in all)


def _attribute(key: Hashable) -> str:
    """The attribute a key's value is kept in: one per key, no dict of its own on every node
    (fewer objects for the garbage collector to scan)."""
    name = _names.get(key)
    if name is None:
        name = _names[key] = f"{_PREFIX}{len(_names)}"
    return name


def subtree_memo(node: ast.AST, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, kept on ``node`` under ``key``; it must depend on ``node``'s subtree only
    (``key`` names what is computed: a constant, never something that changes between analyses)."""
    kept = node.__dict__
    name = _attribute(key)
    try:
        return kept[name]  # type: ignore[no-any-return]
    except KeyError:
        value = kept[name] = compute()
        return value


def forget(node: ast.AST) -> None:
    """Drop what was kept on ``node``: its subtree changed (an edit replaced statements below it)."""
    kept = node.__dict__
    for name in [name for name in kept if name.startswith(_PREFIX)]:
        del kept[name]


def keyed_memo(node: ast.AST, slot: Hashable, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, kept on ``node`` under ``slot`` while ``key`` stays the same (one value per
    slot: a new key replaces the old value).  ``compute`` must depend only on ``node``'s subtree
    and on what ``key`` holds; put ``node.lineno`` in the key when the value holds positions
    (an edit above the node moves them)."""
    kept = node.__dict__
    name = _attribute(slot)
    value = kept.get(name)
    if value is not None and (value[0] is key or value[0] == key):
        return value[1]  # type: ignore[no-any-return]
    result = compute()
    kept[name] = (key, result)
    return result
