"""TT305's wider receivers: tensors built on the host by more than one factory call, then moved.

Two shapes besides ``torch.zeros(...).to(device)``:

* **Math on a fresh CPU tensor**: ``torch.exp(-math.log(p) * torch.arange(half) / half).to(t.device)``
  (a sinusoidal embedding inside ``forward``).  The factory's output only goes through
  elementwise math before the move; any tensor mixed into that math must be on the CPU too
  (else the expression would fail), so the whole value is made on the host every step.
* **NumPy-made data**: ``torch.from_numpy(np.random.choice(2, shape, p=...)).to(device)``, or
  the array held in a name made by a NumPy factory earlier in the same per-step code.  An array
  a loader or a dataset hands over is data that has to travel, and is left alone.
"""

from __future__ import annotations

import ast
from typing import Collection, Optional

from ..hotloops.regions import HotLoops
from ..incremental.walks import subtree
from ._bindings import last_assignment
from ._helpers import is_device_move
from ._tt305_constant_tables import WRAPPERS
from .base import RuleContext

# torch functions that only compute elementwise (or reduce) on their tensor arguments
_TORCH_MATH = frozenset({
    "exp", "log", "sin", "cos", "tan", "sqrt", "rsqrt", "pow", "sigmoid", "tanh", "abs", "neg", "clamp",
    "floor", "ceil", "round", "outer", "cat", "stack", "meshgrid", "flip", "cumsum", "reciprocal", "tril", "triu",
})
# torch's factories (one list for both of TT305's shapes): the random ones draw values, the others do not
FACTORIES = frozenset({"zeros", "ones", "empty", "full", "eye", "arange", "linspace", "logspace", "tensor", "as_tensor"})
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm"})
_TORCH_FACTORIES = FACTORIES | RANDOM_FACTORIES
_TENSOR_METHODS = frozenset({"float", "double", "half", "long", "int", "bool", "byte", "short", "unsqueeze", "squeeze", "view",
                             "reshape", "repeat", "expand", "exp", "sin", "cos", "pow", "sqrt", "t", "transpose", "permute",
                             "flatten", "contiguous", "clone", "type", "type_as"})
_CASTS = frozenset({"type", "type_as"})  # methods whose argument is a model of the result's type, not data
# methods whose arguments are sizes or dimensions (``.expand(len(x), n)``): reading the step's data there moves none of it
_SHAPERS = frozenset({"unsqueeze", "squeeze", "view", "reshape", "repeat", "expand", "transpose", "permute", "flatten"})
_DEPTH = 4  # names and operators followed back from a moved array, at most
_DTYPE_CASTS = frozenset({"float", "double", "half", "long", "int", "bool", "byte", "short"})
_NUMPY_MAKERS = frozenset({"arange", "zeros", "ones", "full", "empty", "eye", "linspace", "tile", "repeat", "ones_like",
                           "zeros_like", "full_like", "meshgrid", "stack", "concatenate"})


def _qualname(ctx: RuleContext, node: ast.AST) -> str:
    return ctx.call_qualname(node) or ""


def host_math_factory(ctx: RuleContext, expr: ast.AST, batch_names: Collection[str]) -> Optional[str]:
    """``torch.<factory>`` when EXPR is elementwise math over a device-less torch factory call (not the
    bare call: TT305's first shape has that) and none of the step's batch (BATCH_NAMES: data that has to
    travel anyway), else None."""
    if not isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.Call, ast.Subscript)):  # ``arange(n)[None, :]``: new dims
        return None
    factory = None
    # Nodes that say how, not what: a factory's sizes (``torch.zeros(n.item() + 1)``) and a cast's model
    # (``.type_as(attn)``, ``.to(x.dtype)``); the step's data read there does not travel.
    how: set[int] = set()
    for node in subtree(expr):  # (parents before their children)
        if id(node) in how:
            continue
        if isinstance(node, ast.Name) and node.id in batch_names:
            return None
        if not isinstance(node, ast.Call):
            continue
        qual = _qualname(ctx, node)
        head, _, short = qual.rpartition(".")
        if head == "torch" and short in _TORCH_FACTORIES:
            if any(k.arg == "device" for k in node.keywords):
                return None  # made on a device already
            factory = factory or short
            if short not in ("tensor", "as_tensor"):
                how.update(id(n) for argument in _arguments(node) for n in ast.walk(argument))
        elif head == "math" or (head == "torch" and short in _TORCH_MATH):
            continue
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _TENSOR_METHODS and not qual.startswith("torch."):
            if node.func.attr in _CASTS or node.func.attr in _SHAPERS:  # a cast's model, a shape's sizes: not data
                how.update(id(n) for argument in _arguments(node) for n in ast.walk(argument))
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "to" and not is_device_move(node, ctx):
            how.update(id(n) for argument in _arguments(node) for n in ast.walk(argument))  # ``.to(x.dtype)``: a cast
        else:
            return None  # a call that could hand over data, or run anywhere
    if factory is None or (isinstance(expr, ast.Call) and _qualname(ctx, expr).rpartition(".")[2] in _TORCH_FACTORIES
                           and _qualname(ctx, expr).startswith("torch.")):
        return None
    return factory


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def numpy_made(ctx: RuleContext, expr: ast.AST, move: ast.Call, batch_names: Collection[str] = (),
               hot: Optional[HotLoops] = None) -> Optional[str]:
    """The NumPy maker (``numpy.random.choice``) when EXPR is ``torch.from_numpy(<made array>)``, the array
    made right there or assigned, in code that runs every step, from such a call before ``move``; EXPR may be a name
    such a tensor was assigned to there (``y = torch.from_numpy(np.repeat(range(n), q))`` ... ``y.cuda()``).
    ``batch_names``: the step's data; ``hot``: the hot loops that say what runs every step (``ctx.hot`` unless given)."""
    hot = ctx.hot if hot is None else hot
    wrapper = _wrapping_call(ctx, expr, move, hot)
    if wrapper is None:
        return None
    return _made_array(ctx, wrapper.args[0], move, batch_names, hot) or None  # ("": constants alone, nothing made)


def loop_invariant_array(ctx: RuleContext, expr: ast.AST, move: ast.Call, batch_names: Collection[str],
                         loop: ast.AST) -> Optional[tuple[str, ast.Call]]:
    """The name of a host array wrapped (``torch.from_numpy(cls_weights)``, ``torch.tensor(w)``) and moved inside
    the step loop ``loop`` though nothing in the loop assigns it: the same data copied at every step, with the
    wrapping call.  EXPR may be a name such a tensor was assigned to in the loop (``weights = torch.from_numpy(w)``
    ... ``weights.cuda()``)."""
    wrapper = _wrapping_call(ctx, expr, move, ctx.hot)
    if wrapper is None or not isinstance(wrapper.args[0], ast.Name):
        return None
    name = wrapper.args[0].id
    if name in batch_names or not (loop.lineno <= wrapper.lineno <= (loop.end_lineno or loop.lineno)):
        return None
    assigned_in_loop = any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
                           for node in subtree(loop))
    return None if assigned_in_loop else (name, wrapper)


def _wrapping_call(ctx: RuleContext, expr: ast.AST, move: ast.Call, hot: HotLoops) -> Optional[ast.Call]:
    """``torch.from_numpy(a)`` (``torch.as_tensor`` / ``torch.tensor`` of one argument) when EXPR is one, under dtype
    casts, or is a name one was assigned to in per-step code before ``move``."""
    if isinstance(expr, ast.Name):
        expr = _assigned_before(ctx, expr.id, move, hot)  # type: ignore[assignment]
    expr = _without_casts(expr)  # type: ignore[arg-type]
    if isinstance(expr, ast.Call) and _qualname(ctx, expr) in WRAPPERS and len(expr.args) == 1:
        return expr
    return None


def _made_array(ctx: RuleContext, array: Optional[ast.expr], move: ast.Call, batch_names: Collection[str],
                hot: HotLoops, depth: int = 0) -> Optional[str]:
    """The NumPy maker behind ARRAY: a maker call, a name assigned one in per-step code before ``move``, or
    arithmetic, comparisons and slices of such arrays with constants and values not set in this code (a rate
    parameter): ``np.random.random((b, f)) > rates``, ``rates[:, 0]``.  "" for such a constant or value alone;
    None when anything else is there (the step's data in ``batch_names``, another call)."""
    if depth > _DEPTH:
        return None
    if isinstance(array, ast.Constant):
        return ""
    if isinstance(array, ast.Name):
        value = _assigned_before(ctx, array.id, move, hot)
        if value is not None:
            return _made_array(ctx, value, move, batch_names, hot, depth + 1)
        if array.id in batch_names or last_assignment(ctx, array.id, move) is not None:
            return None  # the step's data, or a value set once before the steps
        return ""
    if isinstance(array, ast.Call):
        qual = _qualname(ctx, array)
        if qual.startswith("numpy.random.") or (qual.startswith("numpy.") and qual.rpartition(".")[2] in _NUMPY_MAKERS):
            return qual
        return None
    if isinstance(array, ast.Subscript):
        made = _made_array(ctx, array.value, move, batch_names, hot, depth + 1)
        return made or None
    if isinstance(array, (ast.BinOp, ast.Compare, ast.UnaryOp)):
        parts = [array.left, array.right] if isinstance(array, ast.BinOp) else \
            [array.left, *array.comparators] if isinstance(array, ast.Compare) else [array.operand]
        found = [_made_array(ctx, part, move, batch_names, hot, depth + 1) for part in parts]
        if any(f is None for f in found):
            return None
        return next((f for f in found if f), "")
    return None


def _without_casts(expr: Optional[ast.expr]) -> Optional[ast.expr]:
    """``torch.from_numpy(a).long().float()`` -> ``torch.from_numpy(a)``: a dtype cast changes no device."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _DTYPE_CASTS \
            and not expr.args and not expr.keywords:
        expr = expr.func.value
    return expr


def _assigned_before(ctx: RuleContext, name: str, move: ast.Call, hot: HotLoops) -> Optional[ast.expr]:
    """The value last assigned to NAME before MOVE in the same function, when that assignment runs every step
    (by ``hot``)."""
    scope = ctx.enclosing_function(move) or ctx.tree
    latest = last_assignment(ctx, name, move)
    if latest is None or not hot.is_per_step(latest):
        return None
    if _filled_later(scope, name, latest.lineno, move.lineno):
        return None  # ``path = np.zeros(...)`` then ``maximum_path_c(path, ...)``: host-computed data
    return latest.value


def _filled_later(scope: ast.AST, name: str, after: int, before: int) -> bool:
    """Whether NAME is handed to a call, or written into, between lines AFTER and BEFORE."""
    for node in subtree(scope):
        if not after < getattr(node, "lineno", 0) < before:
            continue
        arguments = [*node.args, *(k.value for k in node.keywords)] if isinstance(node, ast.Call) else []
        if any(isinstance(a, ast.Name) and a.id == name for a in arguments):
            return True
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name for t in targets):
                return True
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == name:
            return True  # ``path.fill(...)``, ``mask.put(...)``
    return False
