"""Small predicates several rules share (tensor-ish expressions, device moves)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..hotloops.finder import HotRegion
from ..hotloops.step_markers import names_in as step_names_in
from ..incremental.memo import subtree_memo

if TYPE_CHECKING:
    from ..module_index import ModuleIndex
from ..syntax import assigned_value, keyword_value


def method_name(call: ast.AST) -> str | None:
    """``x.foo(...)`` -> ``"foo"``."""
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def names_in(node: ast.AST) -> frozenset[str]:
    """Every name read or written under ``node``, and ``self.x`` for each attribute of ``self`` there (as
    :func:`..hotloops.step_markers.names_in` gives them; kept on the node, see :mod:`..memo`)."""
    return subtree_memo(node, "names_in", lambda: frozenset(step_names_in(node)))


def root_name(node: ast.AST) -> str | None:
    """The base variable of ``a.b[0].c`` -> ``a``."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def is_device_move(call: ast.AST, ctx: "ModuleIndex | None" = None) -> bool:
    """``x.to(device)``, ``x.to("cuda")``, ``x.cuda()`` (not ``.to(dtype)`` alone); with the module
    (``ctx``) also the legacy ``x.type(torch.cuda.FloatTensor)`` / ``x.type(Tensor)`` where ``Tensor =
    torch.cuda.FloatTensor if cuda else torch.FloatTensor``."""
    name = method_name(call)
    if name == "cuda":
        return True
    if name == "type" and ctx is not None and isinstance(call, ast.Call) and len(call.args) == 1:
        return is_cuda_tensor_type(ctx, call.args[0], call)
    if name != "to" or not isinstance(call, ast.Call):
        return False
    if keyword_value(call, "device") is not None:
        return True
    if not call.args:
        return False
    first = call.args[0]
    if isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name) and first.value.id == "torch":
        return first.attr in ("device",)  # torch.float16 etc. are dtypes
    last = first.attr if isinstance(first, ast.Attribute) else first.id if isinstance(first, ast.Name) else ""
    lowered = last.lower()
    if "dtype" in lowered or (lowered.endswith("type") and "device" not in lowered):
        return False  # x.to(self.img_dtype), x.to(dtype), x.to(self.data_type): a cast, not a copy
    if isinstance(first, ast.Constant):
        return isinstance(first.value, str) and first.value.split(":")[0] in ("cuda", "mps", "xpu", "npu")
    return True


def is_cuda_tensor_type(ctx: "ModuleIndex", node: ast.AST, at: ast.AST) -> bool:
    """``torch.cuda.FloatTensor`` (or its name as a string), or a name last assigned, in the
    function holding ``at`` or at the top of the module, from an expression that names one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.startswith("torch.cuda.") and node.value.endswith("Tensor")
    if isinstance(node, ast.Name):
        scope = ctx.enclosing_function(at)
        value = (assigned_value(scope, node.id) if scope is not None else None) or assigned_value(ctx.tree, node.id)
        return value is not None and any(_names_cuda_type(ctx, n) for n in ast.walk(value))
    return _names_cuda_type(ctx, node)


def _names_cuda_type(ctx: "ModuleIndex", node: ast.AST) -> bool:
    dotted = ctx.qualname(node) if isinstance(node, ast.Attribute) else None
    return bool(dotted) and dotted.startswith("torch.cuda.") and dotted.endswith("Tensor")  # type: ignore[union-attr]


def is_batch_expression(node: ast.AST, region: HotRegion) -> bool:
    """Whether an expression is (derived from) the step's batch data."""
    return bool(names_in(node) & region.batch_names)
