"""Which functions of a module are data code, run by the DataLoader once per sample or batch (for TT306).

* ``__getitem__`` / ``__getitems__`` / ``__iter__`` of dataset classes (a base
  named ``*Dataset``, a class named ``*Dataset``, or a class a DataLoader is
  built on);
* collate functions: passed as ``collate_fn=``, or named ``*collate*``;
* transforms: passed as ``transform=`` / ``target_transform=`` /
  ``transforms=``, listed in ``Compose([...])`` (or wrapped in ``Lambda``),
  and the ``__call__`` / ``forward`` of classes used so or derived from a
  ``*Transform`` base;
* the module's functions and ``self.`` methods those call, two calls deep.

Used by TT306 (per-element Python in data code).  Test files have none.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, Union

from ..file_kinds import is_test_file
from ..module_index import may_end_in
from ..syntax import keyword_value
from ._bindings import resolve_name
from ._loaders import dataloader_calls

if TYPE_CHECKING:
    from .base import RuleContext

DataNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]

_DATASET_METHODS = ("__getitem__", "__getitems__", "__iter__")
_TRANSFORM_METHODS = ("__call__", "forward", "_transform", "transform", "apply")
_TRANSFORM_KEYWORDS = frozenset({"transform", "target_transform", "transforms", "transform_fn"})
_TRANSFORM_SETTERS = frozenset({"set_transform", "with_transform"})
_LISTS_OF_TRANSFORMS = frozenset({"Compose", "RandomApply", "RandomChoice", "RandomOrder"})
_WRAPPERS = frozenset({"Lambda", "partial"})
_NAMED_CALLS = _LISTS_OF_TRANSFORMS | _TRANSFORM_SETTERS  # the calls ``usages`` looks into by name
_HELPER_DEPTH = 2
# Tests that hold only while a model is traced or exported (``torchvision._is_tracing()`` too).
_EXPORT_CHECKS = frozenset({"is_tracing", "_is_tracing", "is_in_onnx_export", "is_scripting", "is_exporting"})
_WORDS = ("__getitem__", "__iter__", "collate", "ransform", "Compose")


@dataclass(frozen=True)
class DataFunction:
    """One function of data code and how a message names it."""

    node: DataNode
    kind: str  # "dataset" | "collate" | "transform"
    where: str  # "`Pixels.__getitem__`", "collate function `pad`", ...
    batch: str | None = None  # the parameter holding the list of samples (collate)
    sample: str | None = None  # the parameter holding the sample (transforms)

    @property
    def container_params(self) -> set[str]:
        """Parameters that hold indices or a list of samples, never one array."""
        node = self.node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("__getitem__", "__getitems__"):
            return {a.arg for a in [*node.args.posonlyargs, *node.args.args]}
        return {self.batch} if self.batch else set()

    @property
    def scanned(self) -> list[ast.AST]:
        """The code that runs per sample: the body, but in ``__iter__`` only its sample loops
        (what comes before them runs once per epoch)."""
        body = self.node.body
        if isinstance(body, ast.expr):
            return [body]
        if isinstance(self.node, ast.Lambda) or self.node.name != "__iter__":
            return list(body)
        return _sample_loops(body)


def _sample_loops(body: list[ast.stmt]) -> list[ast.AST]:
    """The outermost loops of a generator that yield."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and any(
            isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node)
        ):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]


def _first_param(node: DataNode) -> str | None:
    params = [a.arg for a in [*node.args.posonlyargs, *node.args.args] if a.arg not in ("self", "cls")]
    return params[0] if params else None


def _base_names(ctx: "RuleContext", cls: ast.ClassDef) -> list[str]:
    return [(ctx.qualname(base) or "").rsplit(".", 1)[-1] for base in cls.bases]


def _methods(cls: ast.ClassDef, names: tuple[str, ...]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        stmt for stmt in cls.body
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in names
    ]


class _Finder:
    def __init__(self, ctx: "RuleContext") -> None:
        self.ctx = ctx
        self.classes = {
            node.name: node for node in ctx.nodes_of(ast.ClassDef) if isinstance(node, ast.ClassDef)
        }
        self.found: dict[int, DataFunction] = {}

    def add(self, function: DataFunction) -> None:
        self.found.setdefault(id(function.node), function)

    # --- roots ------------------------------------------------------------------

    def datasets(self) -> None:
        used = set(self._dataloader_classes())
        for name, cls in self.classes.items():
            bases = _base_names(self.ctx, cls)
            if name.endswith("Dataset") or name in used or any(b.endswith("Dataset") for b in bases):
                for method in _methods(cls, _DATASET_METHODS):
                    self.add(DataFunction(method, "dataset", f"`{name}.{method.name}`"))
            if any(b.endswith("Transform") for b in bases):
                self._transform_class(cls)

    def _dataloader_classes(self) -> Iterator[str]:
        for call in dataloader_calls(self.ctx):
            dataset = call.args[0] if call.args else keyword_value(call, "dataset")
            if isinstance(dataset, ast.Name):
                dataset = resolve_name(self.ctx, dataset.id, call) or dataset
            if isinstance(dataset, ast.Call) and isinstance(dataset.func, ast.Name):
                yield dataset.func.id

    def usages(self) -> None:
        """Functions named ``*collate*``, and what is passed where a collate or transform goes."""
        for name, functions in self.ctx.functions.items():
            if "collate" in name.lower():
                for function in functions:
                    where = f"collate function `{name}`"
                    self.add(DataFunction(function, "collate", where, batch=_first_param(function)))
        named = self.ctx.names_ending_in(_NAMED_CALLS)
        for call in self._calls_to_read():
            func = call.func
            short = (self.ctx.qualname(func) or "").rsplit(".", 1)[-1] if may_end_in(func, _NAMED_CALLS, named) else ""
            if short in _LISTS_OF_TRANSFORMS and call.args and isinstance(call.args[0], (ast.List, ast.Tuple)):
                for element in call.args[0].elts:
                    self._target(element, "transform", call, 0)
            elif short in _TRANSFORM_SETTERS and call.args:
                self._target(call.args[0], "transform", call, 0)
            for keyword in call.keywords:
                if keyword.arg == "collate_fn":
                    self._target(keyword.value, "collate", call, 0)
                elif keyword.arg in _TRANSFORM_KEYWORDS:
                    self._target(keyword.value, "transform", call, 0)

    def _calls_to_read(self) -> Iterable[ast.Call]:
        """The calls ``usages`` reads: every call where the text names a transform list or setter,
        else only those with a ``collate_fn=`` / ``transform=`` keyword (a typed edit re-reads the
        keywords of a long file, not its every call)."""
        source = self.ctx.source
        if any(word in source for word in _NAMED_CALLS):
            return self.ctx.nodes_of(ast.Call)  # type: ignore[return-value]
        if "collate_fn" not in source and "transform" not in source:
            return ()
        calls: dict[ast.AST, None] = {}
        for keyword in self.ctx.nodes_of(ast.keyword):
            if keyword.arg == "collate_fn" or keyword.arg in _TRANSFORM_KEYWORDS:  # type: ignore[attr-defined]
                calls[self.ctx.parents[keyword]] = None
        return [call for call in calls if isinstance(call, ast.Call)]

    def _target(self, expr: ast.expr, kind: str, at: ast.AST, depth: int) -> None:
        """What a ``collate_fn=`` / ``transform=`` value runs: functions, lambdas, classes' ``__call__``."""
        if depth > 3:
            return
        if isinstance(expr, ast.Lambda):
            self.add(self._function(expr, kind, f"{kind} lambda"))
        elif isinstance(expr, ast.Name):
            if expr.id in self.classes:
                self._transform_class(self.classes[expr.id], kind)
            elif self._plain_functions(expr.id):
                for function in self._plain_functions(expr.id):
                    self.add(self._function(function, kind, expr.id))
            else:
                value = resolve_name(self.ctx, expr.id, at)
                if value is not None:
                    self._target(value, kind, at, depth + 1)
        elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            owner = self.ctx.enclosing_class(expr)
            for method in _methods(owner, (expr.attr,)) if owner is not None else ():
                self.add(self._function(method, kind, f"{owner.name}.{expr.attr}"))
        elif isinstance(expr, ast.Call):
            short = (self.ctx.qualname(expr.func) or "").rsplit(".", 1)[-1]
            if short in _LISTS_OF_TRANSFORMS and expr.args and isinstance(expr.args[0], (ast.List, ast.Tuple)):
                for element in expr.args[0].elts:
                    self._target(element, kind, at, depth + 1)
            elif short in _WRAPPERS and expr.args:
                self._target(expr.args[0], kind, at, depth + 1)
            elif isinstance(expr.func, ast.Name) and expr.func.id in self.classes:
                self._transform_class(self.classes[expr.func.id], kind)

    def _plain_functions(self, name: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """Functions of that name that are not methods."""
        return [f for f in self.ctx.functions.get(name, ()) if not isinstance(self.ctx.parents.get(f), ast.ClassDef)]

    def _transform_class(self, cls: ast.ClassDef, kind: str = "transform") -> None:
        for method in _methods(cls, _TRANSFORM_METHODS):
            self.add(self._function(method, kind, f"{cls.name}.{method.name}"))

    def _function(self, node: DataNode, kind: str, name: str) -> DataFunction:
        where = f"{kind} `{name}`" if kind == "transform" else f"collate function `{name}`"
        if isinstance(node, ast.Lambda):
            where = f"a {kind} lambda"
        first = _first_param(node)
        if kind == "collate":
            return DataFunction(node, kind, where, batch=first)
        return DataFunction(node, kind, where, sample=first)

    # --- helpers they call --------------------------------------------------------

    def helpers(self) -> None:
        frontier = list(self.found.values())
        for _ in range(_HELPER_DEPTH):
            reached: list[DataFunction] = []
            for caller in frontier:
                for callee in self._callees(caller):
                    if id(callee) not in self.found:
                        root = caller.where.split(" (called from ")[-1].rstrip(")")
                        function = DataFunction(callee, caller.kind, f"`{callee.name}` (called from {root})")
                        self.add(function)
                        reached.append(function)
            frontier = reached

    def _callees(self, caller: DataFunction) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
        owner = self.ctx.enclosing_class(caller.node)
        for call in (n for part in caller.scanned for n in ast.walk(part)):
            if not isinstance(call, ast.Call) or self._export_only(call, caller.node):
                continue
            func = call.func
            if isinstance(func, ast.Name):
                yield from (f for f in self.ctx.functions.get(func.id, ()) if self.ctx.parents.get(f) is self.ctx.tree)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                if owner is not None:
                    yield from _methods(owner, (func.attr,))

    def _export_only(self, node: ast.AST, stop: ast.AST) -> bool:
        """Under ``if torch.jit.is_tracing():`` / ``if torch.onnx.is_in_onnx_export():`` (or the
        ``else`` of their negation): code for model export, never run while loading data."""
        child = node
        for ancestor in self.ctx.ancestors(node):
            if ancestor is stop:
                return False
            if isinstance(ancestor, (ast.If, ast.IfExp)):
                test = ancestor.test
                negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
                if negated:
                    test = test.operand  # type: ignore[union-attr]
                if self._is_export_check(test):
                    body = ancestor.body if isinstance(ancestor.body, list) else [ancestor.body]
                    in_body = any(child is b for b in body)
                    return in_body != negated
            child = ancestor
        return False

    def _is_export_check(self, test: ast.expr) -> bool:
        if not isinstance(test, ast.Call):
            return False
        name = (self.ctx.qualname(test.func) or "").rsplit(".", 1)[-1]
        return name in _EXPORT_CHECKS


def data_functions(ctx: "RuleContext") -> list[DataFunction]:
    """Every function of the module that runs as data code, roots first (memoised per module)."""
    if is_test_file(ctx.path, ctx.source) or not any(word in ctx.source for word in _WORDS):
        return []  # every kind of data code names one of these somewhere
    key = ("data-functions",)
    found = ctx.memo.get(key)
    if found is None:
        finder = _Finder(ctx)
        finder.datasets()
        finder.usages()
        finder.helpers()
        found = ctx.memo[key] = list(finder.found.values())
    return found  # type: ignore[return-value]
