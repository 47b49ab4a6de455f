"""Tensors made on the host from Python data: ``torch.from_numpy(a)`` and the legacy typed constructors.

``torch.FloatTensor(x)`` / ``torch.LongTensor(x)`` (torch 0.x style, still common in RL, recommendation and
OCR code) take either data (``torch.FloatTensor(state_batch)``: a copy of a host array) or sizes
(``torch.FloatTensor(batch_size, hidden).fill_(0)``: a new uninitialised tensor).  Neither takes
``device=``, so the tensor is always made on the CPU; moved every step, it is either batch data that
travels (TT301) or a tensor that could have been made on the device (TT305).
"""

from __future__ import annotations

import ast
from typing import Callable, Collection, Optional

from ._bindings import last_assignment
from .base import RuleContext

LEGACY_CONSTRUCTORS = frozenset({
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
    "IntTensor", "LongTensor", "BoolTensor",
})
_CONVERSIONS = frozenset({"float", "double", "half", "long", "int", "bool", "byte", "contiguous"})
_RESHAPES = frozenset({"unsqueeze", "squeeze", "view", "reshape", "expand", "expand_as", "repeat", "t"})
_IN_PLACE_INIT = frozenset({"fill_", "zero_", "uniform_", "normal_", "random_", "bernoulli_", "exponential_"})


def _torch_short(ctx: RuleContext, node: ast.AST) -> str:
    """``FloatTensor`` for a call of ``torch.FloatTensor`` (any alias of torch), else ""."""
    if not isinstance(node, ast.Call):
        return ""
    head, _, short = (ctx.call_qualname(node) or "").rpartition(".")
    return short if head == "torch" else ""


def _peel(node: ast.AST, methods: frozenset[str]) -> ast.AST:
    """NODE without trailing argument-less calls of METHODS (``x.float().long()`` -> ``x``)."""
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods
           and not node.keywords):
        node = node.func.value
    return node


def wrapped_host_data(ctx: RuleContext, expr: ast.AST) -> Optional[ast.expr]:
    """The data in ``torch.from_numpy(a)`` / ``torch.FloatTensor(a)`` (through ``.float()`` & co.): a tensor
    made on the host from one array or list that is not written out in the call, else None."""
    call = _peel(expr, _CONVERSIONS)
    short = _torch_short(ctx, call)
    if short not in LEGACY_CONSTRUCTORS and short != "from_numpy":
        return None
    assert isinstance(call, ast.Call)
    if len(call.args) != 1 or call.keywords or isinstance(call.args[0], (ast.Constant, ast.List, ast.Tuple, ast.Starred)):
        return None
    return call.args[0]


def legacy_created(ctx: RuleContext, expr: ast.AST) -> Optional[str]:
    """``torch.FloatTensor`` & co. when EXPR makes a new tensor with one: from sizes (two or more, or one
    followed by ``.fill_(...)`` / ``.zero_()``), or from numbers written in the call (``FloatTensor([0.5])``)."""
    initialised = _peel(expr, _CONVERSIONS | _RESHAPES)
    filled = False
    if (isinstance(initialised, ast.Call) and isinstance(initialised.func, ast.Attribute)
            and initialised.func.attr in _IN_PLACE_INIT):
        initialised, filled = _peel(initialised.func.value, _CONVERSIONS), True
    short = _torch_short(ctx, initialised)
    if short not in LEGACY_CONSTRUCTORS:
        return None
    assert isinstance(initialised, ast.Call)
    args = initialised.args
    if initialised.keywords or not args or any(isinstance(a, ast.Starred) for a in args):
        return None
    if len(args) >= 2 or filled:
        return f"torch.{short}"
    if _numbers(args[0], lambda node: _range(ctx, node)) or _range(ctx, args[0]):
        return f"torch.{short}"
    return None


def legacy_over_host_data(ctx: RuleContext, expr: ast.AST, inputs: Collection[str], lists_only: bool = False) -> Optional[str]:
    """``torch.LongTensor(lengths)`` & co. (through conversions and reshapes) over values forward code
    computes on the host: a name other than the function's ``inputs`` (the batch it is handed: a copy of
    that is TT301's), or a list holding names or built by a comprehension (``[max_len] * batch_size``,
    ``[w[:k].sum() for k in counts]``).  ``torch.tensor(lengths, dtype=torch.long, device=...)`` makes
    such values on the device in one copy.  ``lists_only`` (a step loop's own code): only a list written
    out, of none of the ``inputs`` (the step's data)."""
    call = _peel(expr, _CONVERSIONS | _RESHAPES)
    short = _torch_short(ctx, call)
    if short not in LEGACY_CONSTRUCTORS:
        return None
    assert isinstance(call, ast.Call)
    if len(call.args) != 1 or call.keywords:
        return None
    data = call.args[0]
    if isinstance(data, ast.BinOp) and isinstance(data.op, ast.Mult):  # ``[n] * batch_size``
        data = data.left if isinstance(data.left, ast.List) else data.right
    if isinstance(data, ast.Name) and (lists_only or data.id in inputs):
        return None
    if lists_only and isinstance(data, ast.ListComp):  # rows gathered from the batch's items: the batch's copy
        return None
    if lists_only and any(isinstance(n, ast.Name) and n.id in inputs for n in ast.walk(data)):
        return None
    if isinstance(data, (ast.Name, ast.ListComp)) or (isinstance(data, ast.List) and data.elts
                                                      and not any(isinstance(e, ast.Starred) for e in data.elts)):
        return f"torch.{short}"
    return None


def _range(ctx: RuleContext, node: ast.AST) -> bool:
    """``range(n)``: numbers the code counts out itself, not data."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
            and node.func.id not in ctx.aliases)


def _numbers(node: ast.AST, counted: Callable[[ast.AST], bool] = lambda node: False) -> bool:
    """A number, or a list or tuple of numbers, written out (nested: ``[[0.5, 1.0]]``); with ``counted``, a
    list may also hold the numbers the code counts out (``[[range(1, n + 2)]]``)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return bool(node.elts) and all(_numbers(e, counted) or counted(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _numbers(node.operand)
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def wrapped_batch(ctx: RuleContext, expr: ast.AST, move: ast.Call) -> Optional[ast.expr]:
    """The data in EXPR (see :func:`wrapped_host_data`) when it is data handed over, not an array the step
    computes on the host right before (``pos = np.tile(...)``, ``torch.from_numpy(np.random.choice(...))``:
    TT305's NumPy-made data)."""
    data = wrapped_host_data(ctx, expr)
    if data is None:
        return None
    if isinstance(data, ast.Call):
        return data if gathered_rows(ctx, data) else None
    if isinstance(data, ast.Name):
        assign = last_assignment(ctx, data.id, move)
        value = assign.value if assign is not None else None
        if isinstance(value, ast.Call) and (ctx.call_qualname(value) or "").startswith(("numpy.", "torch.")):
            return None
    return data


_STACKERS = frozenset({"numpy.vstack", "numpy.stack", "numpy.array", "numpy.asarray", "numpy.concatenate"})


def gathered_rows(ctx: RuleContext, data: ast.expr) -> bool:
    """Rows gathered from a host store every step: ``self.state[ind]`` (an index array into a buffer), or
    ``np.vstack([e.state for e in experiences])`` (a list of sampled records stacked)."""
    if isinstance(data, ast.Subscript):
        index = data.slice
        return isinstance(index, (ast.Name, ast.Attribute)) and not isinstance(data.value, ast.Constant)
    if isinstance(data, ast.Call) and (ctx.call_qualname(data) or "") in _STACKERS and data.args:
        return isinstance(data.args[0], (ast.ListComp, ast.GeneratorExp))
    return False


_STORE_METHODS = frozenset({"add", "push", "store", "append", "insert", "add_experience", "store_transition"})


def replay_sample_calls(ctx: RuleContext) -> list[ast.Call]:
    """The calls of a replay buffer's ``sample`` methods (``sample``, ``sample_batch``...): a class that stores
    transitions (``add`` / ``push`` / ``store``...) and samples them, once per update of the agent that owns it."""
    found: list[ast.Call] = []
    for cls in ctx.nodes_of(ast.ClassDef):
        assert isinstance(cls, ast.ClassDef)
        methods = [f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not any(f.name in _STORE_METHODS for f in methods):
            continue
        by_name = {f.name: f for f in methods}
        samplers = [f for f in methods if f.name.startswith("sample")]
        helpers = [by_name[call.func.attr] for f in samplers for call in ast.walk(f)  # ``self.separate_out_data_types(...)``
                   if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                   and call.func.value.id == "self" and call.func.attr in by_name]
        for function in dict.fromkeys([*samplers, *helpers]):
            found.extend(n for n in ast.walk(function) if isinstance(n, ast.Call))
    return found
