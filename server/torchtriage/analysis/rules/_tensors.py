"""Which per-step expressions hold tensors, and how to guard a statement by step.

The analyzer has no types, so "is a tensor" is inferred from how names are
bound inside the step: batch data, results of model / criterion / torch calls,
loss-like names, and arithmetic or tensor methods over those.  Host values
(``.item()``, ``len()``, ``float(...)``) are never tensors.
"""

from __future__ import annotations

import ast
import re

from ...findings import Applicability, Edit, Fix, Span
from ..context import ModuleContext
from ..hotloops import _MODEL_NAME as MODEL_NAME
from ..hotloops import HotRegion
from ..text import indentation
from ._helpers import names_in

TENSOR_NAME = re.compile(
    r"^(loss|losses|\w*_loss|loss_\w+|logits|\w*_logits|outputs?|preds?|predictions?|probs|"
    r"scores|acc|accuracy|correct|grad_norm|total_norm|norm|targets?|labels?|inputs?|images?)$",
    re.I,
)
_HOST_METHODS = frozenset({"item", "tolist", "numpy", "size", "dim", "numel", "keys", "values", "items"})
_TENSOR_METHODS = frozenset(
    {
        "sum", "mean", "max", "min", "argmax", "argmin", "float", "half", "long", "int", "bool",
        "detach", "softmax", "log_softmax", "sigmoid", "exp", "log", "abs", "pow", "sqrt", "norm",
        "eq", "ne", "gt", "lt", "ge", "le", "view", "reshape", "squeeze", "unsqueeze", "to", "cuda",
        "clone", "contiguous", "cpu", "topk", "isnan", "isinf", "isfinite", "any", "all", "std", "var",
    }
)
_TORCH_MODULES = ("torch", "torch.nn.functional", "F")
_CRITERION = re.compile(r"(criterion|loss_fn|loss_func|lossfn|compute_loss|loss)$", re.I)
LOG_CALL = re.compile(
    r"^(print|logging\.\w+|logger\.\w+|log\.\w+|LOGGER\.\w+|_logger\.\w+|\w+\.set_postfix|\w+\.set_description|"
    r"\w+\.write|tqdm\.write|console\.print)$"
)
CLOCK_CALLS = frozenset(
    {"time.time", "time.perf_counter", "time.monotonic", "time.time_ns", "time.perf_counter_ns", "time.monotonic_ns"}
)


def _is_torch_call(ctx: ModuleContext, call: ast.Call) -> bool:
    qual = ctx.qualname(call.func) or ""
    return qual.startswith(("torch.", "torch.nn.functional.")) and not qual.startswith(
        ("torch.cuda.", "torch.distributed.", "torch.backends.", "torch.utils.")
    )


def tensor_names(ctx: ModuleContext, region: HotRegion) -> frozenset[str]:
    """Names bound to tensors inside one hot region (batch data and what is computed from it)."""
    key = ("tensor_names", id(region))
    cached = ctx.memo.get(key)
    if cached is None:
        cached = ctx.memo[key] = _tensor_names(ctx, region)
    return cached  # type: ignore[return-value]


def _tensor_names(ctx: ModuleContext, region: HotRegion) -> frozenset[str]:
    assigns = [n for n, r in ctx.hot.nodes((ast.Assign, ast.AnnAssign)) if r is region]
    # Batch names are data-derived, but `best = loss.item()` is a host value.
    host = {
        target.id
        for node in assigns
        if node.value is not None and _is_host_value(node.value)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    names = set(region.batch_names) - host
    for _ in range(2):
        for node in assigns:
            value = node.value
            if value is not None and is_tensor_expr(ctx, value, names):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return frozenset(names)


def _is_host_value(node: ast.AST) -> bool:
    """``x.item()``, ``float(x)``, ``len(x)``: values that live on the host."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in _HOST_METHODS:
            return True
        if isinstance(node.func, ast.Name) and node.func.id in ("len", "float", "int", "bool", "str", "round"):
            return True
    return isinstance(node, (ast.Constant, ast.JoinedStr))


def is_tensor_expr(ctx: ModuleContext, node: ast.AST, known: set[str] | frozenset[str]) -> bool:
    """Whether an expression evaluates to a tensor, as far as names and calls tell."""
    if isinstance(node, ast.Name):
        return node.id in known or bool(TENSOR_NAME.match(node.id))
    if isinstance(node, ast.Attribute):
        if node.attr in ("shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "grad_fn"):
            return False
        return bool(TENSOR_NAME.match(node.attr)) and isinstance(node.value, ast.Name) and node.value.id != "args"
    if isinstance(node, ast.Subscript):
        return is_tensor_expr(ctx, node.value, known)
    if isinstance(node, (ast.BinOp,)):
        return is_tensor_expr(ctx, node.left, known) or is_tensor_expr(ctx, node.right, known)
    if isinstance(node, ast.UnaryOp):
        return is_tensor_expr(ctx, node.operand, known)
    if isinstance(node, ast.Compare):
        return is_tensor_expr(ctx, node.left, known) or any(is_tensor_expr(ctx, c, known) for c in node.comparators)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in _HOST_METHODS:
                return False
            if func.attr in _TENSOR_METHODS:
                return is_tensor_expr(ctx, func.value, known)
        if isinstance(func, ast.Name) and func.id in ("len", "float", "int", "bool", "str", "round", "isinstance"):
            return False
        if _is_torch_call(ctx, node):
            return True
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if _CRITERION.search(last) or MODEL_NAME.match(last):
            return True
    return False


def statement_of(ctx: ModuleContext, node: ast.AST) -> ast.stmt | None:
    return ctx.enclosing_statement(node)


def step_counter(ctx: ModuleContext, region: HotRegion) -> str | None:
    """A name counting steps in this region: enumerate index, range variable, or ``step += 1``."""
    if region.counter_names:
        return sorted(region.counter_names)[0]
    for node, owner in ctx.hot.nodes(ast.AugAssign):
        if owner is region and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name):
            if re.search(r"(step|iter|it$|^i$|count|batch_idx)", node.target.id):
                return node.target.id
    return None


def _has_multiline_string(stmt: ast.stmt) -> bool:
    return any(
        isinstance(n, (ast.Constant, ast.JoinedStr)) and n.lineno != n.end_lineno for n in ast.walk(stmt)
    )


def _indent_unit(ctx: ModuleContext, stmt: ast.stmt) -> str:
    parent = ctx.parents.get(stmt)
    own = indentation(ctx.lines[stmt.lineno - 1])
    if isinstance(parent, ast.stmt) and hasattr(parent, "lineno"):
        outer = indentation(ctx.lines[parent.lineno - 1])
        if own.startswith(outer) and len(own) > len(outer):
            return own[len(outer):]
    return "\t" if own.startswith("\t") else "    "


def guard_statement_fix(
    ctx: ModuleContext, stmt: ast.stmt, counter: str, every: int, title: str
) -> Fix | None:
    """Wrap a statement in ``if <counter> % <every> == 0:`` (unsafe: it runs less often)."""
    if _has_multiline_string(stmt) or stmt.end_lineno is None:
        return None
    first = ctx.lines[stmt.lineno - 1]
    indent = indentation(first)
    if first[len(indent):ctx.char_column(stmt.lineno, stmt.col_offset)].strip():
        return None  # shares its line with another statement
    last = ctx.lines[stmt.end_lineno - 1]
    if last[ctx.char_column(stmt.end_lineno, stmt.end_col_offset or 0):].strip().startswith(";"):
        return None
    unit = _indent_unit(ctx, stmt)
    body = [ctx.lines[number - 1] for number in range(stmt.lineno, stmt.end_lineno + 1)]
    text = f"{indent}if {counter} % {every} == 0:\n" + "".join(
        (f"{unit}{line}\n" if line.strip() else "\n") for line in body
    )
    span = Span(stmt.lineno, 1, stmt.end_lineno + 1, 1)
    return Fix(title, Applicability.UNSAFE, (Edit(span, text),))
