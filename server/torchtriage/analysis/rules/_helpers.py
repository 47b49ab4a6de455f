"""Small predicates several rules share (tensor-ish expressions, device moves)."""

from __future__ import annotations

import ast

from ..hotloops.finder import HotRegion
from ..incremental.memo import subtree_memo
from ..syntax import keyword_value


def method_name(call: ast.AST) -> str | None:
    """``x.foo(...)`` -> ``"foo"``."""
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def names_in(node: ast.AST) -> frozenset[str]:
    """Every name read or written under ``node`` (kept on the node, see :mod:`..memo`)."""
    return subtree_memo(node, "names_in", lambda: frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name)))


def root_name(node: ast.AST) -> str | None:
    """The base variable of ``a.b[0].c`` -> ``a``."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def is_device_move(call: ast.AST) -> bool:
    """``x.to(device)``, ``x.to("cuda")``, ``x.cuda()`` (not ``.to(dtype)`` alone)."""
    name = method_name(call)
    if name == "cuda":
        return True
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
    if "dtype" in last.lower():
        return False  # x.to(self.img_dtype), x.to(dtype): a cast, not a copy
    if isinstance(first, ast.Constant):
        return isinstance(first.value, str) and first.value.split(":")[0] in ("cuda", "mps", "xpu", "npu")
    return True


def is_batch_expression(node: ast.AST, region: HotRegion) -> bool:
    """Whether an expression is (derived from) the step's batch data."""
    return bool(names_in(node) & region.batch_names)
