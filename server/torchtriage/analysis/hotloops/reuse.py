"""Keep a module's per-step code from one version to the next when an edit did not touch it.

Marking the per-step code (:mod:`.hotloops`) is one interleaved pass over the step
loops and every function they reach (innermost loops first, each node claimed by
the first region to reach it), so it cannot be kept node by node (:mod:`.memo`).
It is kept whole instead, with everything it read, and reused when all of that is
unchanged:

* the *inputs* read outside the regions it marked: the file's path and how call
  paths name it, the step loops found (with their depth and whether they train),
  the module's functions, classes, instances, lambdas, loader variables, modulo
  helpers and imports, the Lightning hooks, the entries other files call per step,
  and the batch-like parameters of the function around each step loop;
* a *token* on the root of every region (its loop, function or lambda), kept
  with :func:`.memo.subtree_memo`: a re-parse replaces the statements an edit
  changed and forgets what was kept on every ancestor of them, so a root that
  still holds the token it had has the same subtree, node for node;
* the line of every call that extends a call path from another file
  (``"engine.py:88"``), the only positions the result holds.

A typing edit in a long ``main()`` that the step loop does not reach leaves all of
them unchanged: its 700 per-step nodes are not marked again.  A fresh pass over
the same inputs and subtrees marks the same nodes the same way; the random-edit
tests (``tests/analysis/incremental/``) check it against fresh analyses.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Hashable

from .regions import HotLoops
from ..incremental.memo import subtree_memo
from ..module_index import ModuleIndex

_SLOT = "hot_loops"  # in ParsedModule.carried
_TOKEN = "hot-region-token"  # the subtree_memo key of a root's token


@dataclass(eq=False)
class _Kept:
    inputs: Hashable
    tokens: tuple[tuple[ast.AST, object], ...]  # (region root, its token)
    path_lines: tuple[tuple[ast.AST, int], ...]  # (call extending a cross-file path, its line then)
    result: HotLoops


def _token(root: ast.AST) -> object:
    return subtree_memo(root, _TOKEN, object)


def _carried(ctx: ModuleIndex) -> dict[str, object] | None:
    parsed = ctx.parsed
    return parsed.carried if parsed is not None and parsed.tree is ctx.tree else None


def kept_hot_loops(ctx: ModuleIndex, inputs: Hashable) -> HotLoops | None:
    """The previous version's per-step code, if it still holds for ``inputs`` (else None)."""
    carried = _carried(ctx)
    kept = carried.get(_SLOT) if carried is not None else None
    if not isinstance(kept, _Kept) or kept.inputs != inputs:
        return None
    if any(_token(root) is not token for root, token in kept.tokens):
        return None
    if any(getattr(call, "lineno", None) != line for call, line in kept.path_lines):
        return None
    return kept.result


def keep_hot_loops(ctx: ModuleIndex, inputs: Hashable, result: HotLoops) -> None:
    """Keep this version's per-step code for the next version of the module (incremental parses only)."""
    carried = _carried(ctx)
    if carried is None:
        return
    tokens = tuple((region.node, _token(region.node)) for region in result.regions)
    path_lines = tuple(
        (region.via, region.via.lineno) for region in result.regions if region.hot_path and region.via is not None
    )
    carried[_SLOT] = _Kept(inputs, tokens, path_lines, result)
