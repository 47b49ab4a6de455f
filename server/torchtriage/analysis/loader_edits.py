"""The edit behind the runtime's loader advice: give each DataLoader of a file its workers.

When a profile finds the run waiting for data, the advice is "num_workers=N,
persistent_workers=True" (and pinned memory on CUDA).  This module turns that
advice into format-preserving edits of every DataLoader call of the file whose
workers are written as a literal below N or left out, so that ``fix --verify``
can measure it like any quick fix.  Calls whose workers come from a variable or
a ``**dict`` are left alone: their value is the script's to choose.
"""

from __future__ import annotations

import ast

from ..findings import Applicability, Edit
from .context import ModuleContext
from .fixes import add_keywords_fix
from .parsing import parse_source
from .rules._loaders import DATALOADER_QUALNAMES

_WORKERS_POSITION = 5  # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, ...)


def _literal(call: ast.Call, name: str, position: int | None = None) -> tuple[bool, object]:
    """(written, value): whether the call writes ``name``, and its value when a literal (else ...)."""
    node: ast.expr | None = None
    if position is not None and len(call.args) > position:
        node = call.args[position]
    for keyword in call.keywords:
        if keyword.arg == name:
            node = keyword.value
    if node is None:
        return False, None
    return True, node.value if isinstance(node, ast.Constant) else ...


def loader_worker_edits(source: str, path: str, workers: int, cuda: bool) -> list[tuple[int, str, tuple[Edit, ...]]]:
    """For each DataLoader call with fewer than ``workers`` literal workers: (line, title, edits)."""
    if workers < 1 or "DataLoader" not in source:
        return []
    tree = parse_source(source, path)
    if not isinstance(tree, ast.Module):
        return []
    ctx = ModuleContext(source=source, tree=tree, path=path)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or ctx.call_qualname(node) not in DATALOADER_QUALNAMES:
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            continue  # *args / **kwargs may set the workers already
        if len(node.args) > _WORKERS_POSITION:
            continue  # positional workers: rewriting them is not mechanical
        written, value = _literal(node, "num_workers")
        if written and not (isinstance(value, int) and value < workers):
            continue
        keywords = [("num_workers", str(workers))]
        if not _literal(node, "persistent_workers")[0]:
            keywords.append(("persistent_workers", "True"))
        if cuda and not _literal(node, "pin_memory", 7)[0]:
            keywords.append(("pin_memory", "True"))
        title = "Set " + ", ".join(f"{k}={v}" for k, v in keywords)
        fix = add_keywords_fix(ctx, node, keywords, title, Applicability.SAFE)
        found.append((node.lineno, title, fix.edits))
    return sorted(found, key=lambda item: item[0])
