"""Which per-step values still carry an autograd graph (for TT201).

A name carries a graph when the step assigns it from the model or a loss
function (``out = model(x)``, ``loss = criterion(out, y)``), from an
expression over such names (``loss = out.loss / accum``), from a function of
this file that returns such a value, or when the step calls ``.backward()`` on
it.  ``.detach()``, ``.item()``, ``.cpu()``, ``float()`` and friends end the
graph.  Assignments under ``torch.no_grad()`` never carry one.
"""

from __future__ import annotations

import ast
import re

from .base import RuleContext
from ..hotloops.finder import HotRegion, is_backward_call
from ._helpers import method_name, names_in
from ._steps import differentiated_tensor, own_walk
from ._tt201_steps import lexically_grad_off

_PRODUCER = re.compile(
    r"^(self|forward|model|net|network|module|ddp_model|raw_model|\w*_model|model_\w*|classifier|generator|"
    r"discriminator|gen|disc|encoder|decoder|policy|critic|backbone|head|teacher|student|criterion|\w*loss\w*|"
    r"cross_entropy|nll|mse|bce\w*|l1|smooth_l1|kl_div|ctc|binary_cross_entropy\w*)$",
    re.I,
)
# Results of these have no graph (or no longer hold the step's device graph).
STOP_METHODS = frozenset(
    {
        "detach", "detach_", "item", "cpu", "tolist", "numpy", "argmax", "argmin", "long", "int", "bool",
        "size", "dim", "numel", "eq", "ne", "lt", "gt", "le", "ge", "isnan", "isinf", "isfinite", "any",
        "all", "nonzero", "sign", "round", "floor", "ceil",
    }
)
_STOP_ATTRIBUTES = frozenset({"data", "grad", "shape", "dtype", "device", "requires_grad", "ndim", "is_cuda"})
_REDUCTIONS = frozenset({"mean", "sum", "float", "double", "half", "squeeze", "view", "reshape", "mul", "div"})
_DIFFERENTIABLE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult)


def carrier(node: ast.AST, graph: set[str]) -> bool:
    """Whether an expression's value still holds a graph built from ``graph`` names."""
    if isinstance(node, ast.Name):
        return node.id in graph
    if isinstance(node, ast.Attribute):
        return node.attr not in _STOP_ATTRIBUTES and carrier(node.value, graph)
    if isinstance(node, ast.Subscript):
        return carrier(node.value, graph)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr not in STOP_METHODS:
            return carrier(node.func.value, graph)
        return False  # float(t), len(t), unknown functions: not assumed to keep a graph
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _DIFFERENTIABLE_OPS) and (carrier(node.left, graph) or carrier(node.right, graph))
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub) and carrier(node.operand, graph)
    if isinstance(node, (ast.Tuple, ast.List)):
        return any(carrier(e, graph) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(carrier(v, graph) for v in node.values)
    if isinstance(node, ast.IfExp):
        return carrier(node.body, graph) or carrier(node.orelse, graph)
    return False


def carrying_parts(node: ast.expr, graph: set[str]) -> list[ast.expr]:
    """The sub-expressions to detach: the elements of a tuple/list/dict, else the whole."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return [part for e in node.elts for part in carrying_parts(e, graph)]
    if isinstance(node, ast.Dict):
        return [part for v in node.values for part in carrying_parts(v, graph)]
    return [node] if carrier(node, graph) else []


def _plain_value(value: ast.AST) -> bool:
    """A value read off a tensor that holds no graph: a number (``loss.item()``, ``float(loss)``), a detached or
    host copy (``loss.detach().cpu().numpy()``)."""
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Name):
            return value.func.id in ("float", "int", "bool", "len", "str")
        return isinstance(value.func, ast.Attribute) and value.func.attr in STOP_METHODS
    return False


def _backward_root(receiver: ast.AST) -> str | None:
    """``loss`` in ``loss.mean()`` / ``out.loss``: the name a differentiated tensor comes from."""
    while True:
        if isinstance(receiver, ast.Name):
            return receiver.id if receiver.id != "self" else None
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
            if receiver.func.attr not in _REDUCTIONS:
                return None  # ``self.loss(out, y).backward()``: a fresh value, no name
            receiver = receiver.func.value
        elif isinstance(receiver, (ast.Attribute, ast.Subscript)):
            receiver = receiver.value
        else:
            return None


def bound_names(target: ast.AST) -> set[str]:
    """Plain names an assignment target binds (not ``hist[i]`` or ``self.x``)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {name for e in target.elts for name in bound_names(e)}
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return set()


def _loaded_names(node: ast.AST) -> frozenset[str]:
    return names_in(node)  # (kept on the node)


def _callee_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


class GraphTracker:
    """Graph-carrying names per hot region, computed on demand and cached."""

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx
        self._cache: dict[int, set[str]] = {}
        self._functions = ctx.functions
        self._returning: dict[int, bool] = {}

    def names(self, region: HotRegion) -> set[str]:
        return self._names_in_body(region.node)

    def produces_from(self, value: ast.AST, graph: set[str]) -> bool:
        """A call that makes a graph-carrying value from the step's graph (``loss_func(out, y)``, ``criterion(out, y)``)."""
        return isinstance(value, ast.Call) and not carrier(value, graph) and self._is_producer(value, graph) \
            and any(carrier(a, graph) for a in [*value.args, *(k.value for k in value.keywords)])

    def _is_producer(self, value: ast.AST, graph: set[str]) -> bool:
        if carrier(value, graph):
            return True
        if not isinstance(value, ast.Call):
            return False
        if isinstance(value.func, ast.Attribute) and value.func.attr in STOP_METHODS:
            return False
        name = _callee_name(value)
        if isinstance(value.func, ast.Name) and name in self._functions:
            return any(self._returns_graph(func) for func in self._visible(name, value))
        if isinstance(value.func, ast.Attribute) and method_name(value) in ("to", "cuda", "train", "eval"):
            return False
        return bool(_PRODUCER.match(name))

    def _visible(self, name: str, call: ast.Call) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """Functions a bare-name call can reach: module-level ones or ones nested in a caller."""
        callers = set(map(id, self.ctx.ancestors(call)))
        return [
            func
            for func in self._functions[name]
            if not isinstance(self.ctx.parents.get(func), ast.ClassDef)
            and (self.ctx.enclosing_function(func) is None or id(self.ctx.enclosing_function(func)) in callers)
        ]

    def _returns_graph(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether a function of this file returns a graph-carrying value."""
        if id(func) not in self._returning:
            self._returning[id(func)] = False  # recursion guard
            graph = self._names_in_body(func)
            self._returning[id(func)] = any(
                isinstance(node, ast.Return) and node.value is not None and carrier(node.value, graph)
                for node in own_walk(func)
            )
        return self._returning[id(func)]

    def _names_in_body(self, scope: ast.AST) -> set[str]:
        if id(scope) not in self._cache:
            self._cache[id(scope)] = set()  # recursion guard
            self._cache[id(scope)] = self._compute(scope)
        return self._cache[id(scope)]

    def _compute(self, scope: ast.AST) -> set[str]:
        graph: set[str] = set()
        backpropagated: set[str] = set()  # names ``.backward()`` runs on: graph-carrying whatever made them
        assignments = [
            n for n in own_walk(scope) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
        ]
        assignments.sort(key=lambda n: (n.lineno, n.col_offset))
        for node in own_walk(scope):
            if is_backward_call(node) or method_name(node) == "manual_backward":
                tensor = differentiated_tensor(self.ctx, node)  # type: ignore[arg-type]
                root = _backward_root(tensor) if tensor is not None else None
                if root is not None:
                    graph.add(root)
                    backpropagated.add(root)
        plain: set[str] = set()
        for _ in range(2):  # a second pass picks up names derived from later producers
            plain = set()
            for node in assignments:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound = {name for t in targets for name in bound_names(t)}
                if bound & backpropagated and _plain_value(node.value):
                    plain |= bound  # ``L = L.cpu().detach().numpy()`` after ``L.backward()``: a graph, then a number
                    continue
                if isinstance(node.value, ast.Constant) or bound & _loaded_names(node.value):
                    continue  # ``loss = 0.0`` / ``total = total + loss`` say nothing about the name
                if lexically_grad_off(self.ctx, node) or not self._is_producer(node.value, graph):  # type: ignore[arg-type]
                    if bound <= backpropagated and not _plain_value(node.value):
                        continue  # ``batch_loss = self.process_one_batch(...)`` then ``batch_loss.backward()``
                    plain |= bound
                else:
                    graph |= bound
        return graph - plain - {"self"}  # assigned both ways (``loss = loss.item()``): unsure, so no
