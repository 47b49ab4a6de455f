"""TT501's model calls made by the model itself: an ``nn.Module``'s own evaluation method.

Recommenders and other self-contained models carry their evaluation as a method
(``def rank(self, test_loader)``) whose loop runs the model through ``self``:
``self(u, i)``, ``self.forward(u, i)``, or one of the submodules it built
(``self.embed_user(us)`` for ``self.embed_user = nn.Embedding(...)``).  Those
are model calls on the loop's data as much as ``model(x)`` is.
"""

from __future__ import annotations

import ast

from ..incremental.walks import subtree
from ._helpers import names_in
from .base import RuleContext


def is_self_model_call(ctx: RuleContext, node: ast.AST, data_names: set[str]) -> bool:
    """``self(x)``, ``self.forward(x)`` or ``self.<torch.nn submodule>(x)`` on the loop's data, in a class
    that builds torch.nn submodules (a model)."""
    if not isinstance(node, ast.Call) or not data_names:
        return False
    func = node.func
    if isinstance(func, ast.Name):
        attr = "forward" if func.id == "self" else ""
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        attr = func.attr
    else:
        return False
    if not attr or not any(names_in(arg) & data_names for arg in [*node.args, *(k.value for k in node.keywords)]):
        return False
    cls = ctx.enclosing_class(node)
    if cls is None:
        return False
    built = ctx.memo.get((torch_submodules, cls))
    if built is None:  # once per class and analysis
        built = ctx.memo[(torch_submodules, cls)] = torch_submodules(ctx, cls)
    return bool(built) and (attr == "forward" or attr in built)


def torch_submodules(ctx: RuleContext, cls: ast.ClassDef) -> frozenset[str]:
    """The attributes a class sets to a ``torch.nn`` layer (``self.fc = nn.Linear(...)``)."""
    found = set()
    for node in subtree(cls):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            name = ctx.qualname(node.value.func) or ""
            if not (name.startswith("torch.nn.") and name.rsplit(".", 1)[-1][:1].isupper()):
                continue
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    found.add(target.attr)
    return frozenset(found)
