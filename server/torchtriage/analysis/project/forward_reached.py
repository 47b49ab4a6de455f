"""What another file's forward code runs of this one: classes it builds and functions it calls, every pass.

A model's ``forward`` runs once per step (``rules/_forward_code``), and so do the helpers it calls and
the ``__init__`` of a helper object it builds: an attention layer's ``attn_mask =
TriangularCausalMask(B, L, device=queries.device)``, whose ``__init__`` makes the mask on the CPU and
copies it to the device; a UNet's ``timestep_embedding(timesteps, dim)`` from a helpers file.  Within
one file the forward code already follows them; this finds those that live in another project file
(imported by name), so that file's rules read them as forward code.
"""

from __future__ import annotations

import ast

from ..rules._forward_code import forward_calls
from .modules import ModuleTable, ProjectModule


def forward_reached_names(table: ModuleTable) -> dict[ProjectModule, frozenset[str]]:
    """Per file: the names of its classes and module-level functions that another file's forward code
    builds or calls by an imported name."""
    found: dict[ProjectModule, set[str]] = {}
    for module in table.by_path.values():
        ctx = module.ctx
        if ctx is None or not module.imports or "def forward" not in ctx.source:
            continue
        for call in forward_calls(ctx):  # type: ignore[arg-type]  # a ModuleContext is a rule's context
            func = call.func
            if not isinstance(func, ast.Name) or func.id not in module.imports:
                continue
            target = table.symbol(module, func.id)
            if isinstance(target, tuple) and target[0] is not module \
                    and isinstance(target[1], (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(target[0], set()).add(target[1].name)
    return {module: frozenset(names) for module, names in found.items()}
