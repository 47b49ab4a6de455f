"""Classes another file's forward code builds: their ``__init__`` runs every forward pass.

A model's ``forward`` runs once per step (``rules/_forward_code``), and a helper object it builds runs
its ``__init__`` as often: an attention layer's ``attn_mask = TriangularCausalMask(B, L,
device=queries.device)``, whose ``__init__`` makes the mask on the CPU and copies it to the device.
Within one file the forward code already follows such a constructor; this finds the classes that live
in another project file (imported by name), so that file's rules read their ``__init__`` as forward code.
"""

from __future__ import annotations

import ast

from ..rules._forward_code import forward_calls
from .modules import ModuleTable, ProjectModule


def forward_built_classes(table: ModuleTable) -> dict[ProjectModule, frozenset[str]]:
    """Per file: the names of its classes that another file's forward code constructs by an imported name."""
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
            if isinstance(target, tuple) and isinstance(target[1], ast.ClassDef) and target[0] is not module:
                found.setdefault(target[0], set()).add(target[1].name)
    return {module: frozenset(names) for module, names in found.items()}
