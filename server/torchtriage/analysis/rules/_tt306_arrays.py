"""Inside data code: which expressions are arrays, lists of their elements, or their sizes (for TT306).

An *array* is a tensor, a numpy array or a PIL image (or its pixel access
object): iterating it, or indexing it in a loop, visits elements or rows in
Python.  *Elements* is a Python list of an array's values (``t.tolist()``,
``list(t)``, a comprehension over an array).  For ``range`` bounds, a *size*
comes from an array (``len(t)``, ``img.shape[1]``, ``h, w = img.size``) and a
*count* does not (a literal, ``len(self.files)``, ``len(batch)``).

Evidence is local: names bound in the function, ``self.x`` as the class
assigns it, torch / numpy / cv2 / PIL calls.  A parameter is an array when
annotated so, when the function reads its ``.shape`` / ``.dtype`` (or calls
``.numpy()``...), or when it is a transform's input that is not used as a dict,
tuple or list.  Everything else stays unknown (``None``): other parameters,
attributes set from parameters, ``torch.load`` results; TT306 fires only on
what is known, so an unknown costs a miss, never a false alarm.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable

from ._scopes import Binding, scope_bindings
from ._tensor_facts import torch_function_result

if TYPE_CHECKING:
    from .base import RuleContext

ARRAY, ELEMENTS = "array", "elements"
SIZE, COUNT = "size", "count"

_MAX_DEPTH = 8
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_ARRAY_MODULES = ("numpy.", "cv2.", "PIL.Image.", "torchvision.io.", "torchvision.transforms.functional.",
                  "torchvision.transforms.v2.functional.")
# Index generators: iterating them is a range of indices, judged like ``range`` (see ._tt306_element_loops).
INDEX_SOURCES = frozenset({"torch.arange", "torch.randperm", "numpy.arange", "numpy.random.permutation",
                           "numpy.random.choice", "numpy.random.randint", "torch.randint"})
_ELEMENT_METHODS = frozenset({"tolist", "getdata"})
_SCALAR_METHODS = frozenset(
    {"item", "size", "dim", "numel", "nelement", "ndimension", "element_size", "stride", "data_ptr",
     "is_contiguous", "is_floating_point", "keys", "values", "items", "get", "split", "chunk", "unbind",
     "tensor_split", "getpixel", "putpixel", "sum", "mean", "std", "max", "min", "any", "all", "argmax", "argmin"}
)
_SIZE_METHODS = frozenset({"size", "numel", "nelement"})
_SIZE_ATTRS = frozenset({"shape", "size", "width", "height"})
_EVIDENCE_ATTRS = frozenset({"shape", "ndim", "dtype", "numpy", "permute", "unsqueeze", "squeeze", "astype"})
_ARRAY_ANNOTATION = ("Tensor", "ndarray", "Image", "NDArray")
_SAME_KIND = frozenset({"list", "tuple", "sorted", "reversed"})
_CONTAINER_METHODS = frozenset({"items", "keys", "values", "get", "append", "extend"})
_CONTAINER_TYPES = frozenset({"dict", "list", "tuple", "Mapping", "Sequence"})
_COMBINE = frozenset({"min", "max", "int", "round", "abs"})


def _is_scope(node: ast.AST) -> bool:
    return isinstance(node, _SCOPES)


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


class Arrays:
    """Array-ness of expressions in one module's data code (results memoised)."""

    def __init__(self, ctx: "RuleContext") -> None:
        self.ctx = ctx
        self.never: dict[int, set[str]] = {}  # id(function) -> parameters that hold no array (indices, batches)
        self.samples: dict[int, str] = {}  # id(transform) -> the parameter that receives the sample
        # Set by the rule: whether a comprehension's generator walks elements (makes it ELEMENTS).
        self.walks: Callable[[ast.comprehension, ast.AST], bool] | None = None
        self._kinds: dict[int, str | None] = {}
        self._busy: set[int] = set()
        self._bindings: dict[int, dict[str, list[Binding]]] = {}

    # --- arrays and element lists ------------------------------------------------

    def kind(self, node: ast.AST, depth: int = 0) -> str | None:
        """ARRAY, ELEMENTS or None."""
        key = id(node)
        if key in self._kinds:
            return self._kinds[key]
        if depth > _MAX_DEPTH or key in self._busy:
            return None
        self._busy.add(key)
        try:
            result = self._kind(node, depth + 1)
        finally:
            self._busy.discard(key)
        self._kinds[key] = result
        return result

    def _kind(self, node: ast.AST, depth: int) -> str | None:
        if isinstance(node, ast.Name):
            return self._name(node, depth)
        if isinstance(node, ast.Attribute):
            if _is_self(node.value):
                return self._self_attribute(node, depth)
            if node.attr in ("T", "mT", "data", "real", "flat"):
                return ARRAY if self.kind(node.value, depth) == ARRAY else None
            return None
        if isinstance(node, ast.Subscript):
            value = self.kind(node.value, depth)
            if value == ARRAY and not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                return ARRAY
            return ELEMENTS if value == ELEMENTS and isinstance(node.slice, ast.Slice) else None
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.BinOp):
            kinds = {self.kind(node.left, depth), self.kind(node.right, depth)}
            if ARRAY in kinds:
                return ARRAY
            return ELEMENTS if kinds == {ELEMENTS} else None
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand, depth) if isinstance(node.op, ast.USub) else None
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and self.walks is not None:
            return ELEMENTS if any(self.walks(gen, node) for gen in node.generators) else None
        if isinstance(node, ast.IfExp):
            body = self.kind(node.body, depth)
            return body if body == self.kind(node.orelse, depth) else None
        return None

    def _call(self, node: ast.Call, depth: int) -> str | None:
        func = node.func
        qualname = self.ctx.qualname(func) or ""
        if qualname.startswith("torch."):
            return ARRAY if torch_function_result(qualname) else None
        if qualname.startswith(_ARRAY_MODULES) and qualname != "numpy.random.seed":
            if qualname.startswith("numpy.") and node.args and self._per_sample(node.args[0]):
                return None  # ``np.argsort([b[1].shape[1] for b in batch])`` in a collate: one value per sample
            return ARRAY
        if isinstance(func, ast.Name) and func.id not in self.ctx.aliases:
            if func.id in _SAME_KIND and len(node.args) == 1:
                inner = self.kind(node.args[0], depth)
                return ELEMENTS if inner in (ARRAY, ELEMENTS) else None
            return None
        if isinstance(func, ast.Attribute):
            if func.attr in _ELEMENT_METHODS:
                return ELEMENTS  # only arrays (and PIL images) have .tolist() / .getdata()
            receiver = self.kind(func.value, depth)
            if receiver != ARRAY:
                return None
            return None if func.attr in _SCALAR_METHODS else ARRAY
        return None

    def _per_sample(self, node: ast.expr, depth: int = 0) -> bool:
        """A list made by walking a parameter that holds no array (a collate's list of samples), directly
        or through the name it was assigned to: as many values as the batch has samples."""
        if isinstance(node, ast.Name) and depth < 2:
            value = self.value_of(node)
            return value is not None and self._per_sample(value, depth + 1)
        if not isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return False
        for generator in node.generators:
            walked = generator.iter
            binding = self._binding(walked) if isinstance(walked, ast.Name) else None
            if binding is not None and isinstance(binding[0], ast.arg) and binding[0].arg in self.never.get(id(binding[3]), ()):
                return True
        return False

    def _name(self, node: ast.Name, depth: int) -> str | None:
        binding = self._binding(node)
        if binding is None:
            return None
        statement, outer, named, scope = binding
        if isinstance(statement, ast.arg):
            return ARRAY if self._is_array_param(statement, scope) else None
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.comprehension)):
            if named is not outer:
                return None  # a part of an unpacked element: (i, row) of enumerate, tuples of zip
            return ARRAY if self.kind(statement.iter, depth) == ARRAY else None
        value = getattr(statement, "value", None)
        if value is None or isinstance(statement, ast.AugAssign):
            return None
        if named is outer:
            return self.kind(value, depth)
        source = _unpacked(outer, named, value)
        return self.kind(source, depth) if source is not None else None

    def _binding(self, node: ast.Name) -> tuple[ast.AST, ast.AST, ast.AST, ast.AST] | None:
        """(binding statement, its whole target, the Name in it, its scope): the latest before the use."""
        use = (node.lineno, node.col_offset)
        for scope in self._scopes_of(node):
            if isinstance(scope, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                for generator in scope.generators:
                    named = _target_naming(generator.target, node.id)
                    if named is not None:
                        return generator, generator.target, named, scope
                continue
            table = self._bindings.get(id(scope))
            if table is None:
                table = self._bindings[id(scope)] = scope_bindings(scope)
            candidates = [
                c for c in table.get(node.id, ()) if isinstance(c[0], ast.arg) or _target_naming(c[1], node.id)
            ]
            if candidates:
                before = [c for c in candidates if c[2] <= use]
                statement, outer, _ = (before or candidates)[-1]
                return statement, outer, _target_naming(outer, node.id) or outer, scope
        return None

    def value_of(self, node: ast.Name) -> ast.expr | None:
        """The value a name was last assigned whole (``x = value``), else None."""
        binding = self._binding(node)
        if binding is None or binding[1] is not binding[2] or isinstance(binding[0], ast.AugAssign):
            return None
        return getattr(binding[0], "value", None) if isinstance(binding[0], (ast.Assign, ast.AnnAssign)) else None

    def _scopes_of(self, node: ast.AST) -> list[ast.AST]:
        return [
            a for a in self.ctx.ancestors(node)
            if _is_scope(a) or isinstance(a, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
        ]

    def _is_array_param(self, arg: ast.arg, scope: ast.AST) -> bool:
        if arg.arg in self.never.get(id(scope), ()):
            return False
        if arg.annotation is not None:
            return any(word in ast.unparse(arg.annotation) for word in _ARRAY_ANNOTATION)
        if self.samples.get(id(scope)) == arg.arg and not _is_container(arg.arg, scope):
            return True  # a transform's input: an image or a tensor
        return any(  # img.shape, t.dtype, x.numpy(): only arrays have those
            isinstance(n, ast.Attribute) and n.attr in _EVIDENCE_ATTRS
            and isinstance(n.value, ast.Name) and n.value.id == arg.arg
            for n in ast.walk(scope)
        )

    def _self_attribute(self, node: ast.Attribute, depth: int) -> str | None:
        """``self.data``: what the class assigns to it (any method, usually ``__init__``)."""
        cls = self.ctx.enclosing_class(node)
        if cls is None:
            return None
        kinds = set()
        for statement in ast.walk(cls):
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
                if (isinstance(target, ast.Attribute) and target.attr == node.attr
                        and isinstance(target.value, ast.Name) and target.value.id == "self"):
                    kinds.add(self.kind(statement.value, depth))
        return kinds.pop() if len(kinds) == 1 else None

    # --- range bounds --------------------------------------------------------------

    def bound(self, node: ast.AST, depth: int = 0) -> str | None:
        """SIZE (from an array), COUNT (not from one) or None (unknown)."""
        if depth > _MAX_DEPTH:
            return None
        depth += 1
        if isinstance(node, ast.Constant):
            return COUNT
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1:
                return SIZE if self.kind(node.args[0]) else COUNT
            if isinstance(func, ast.Attribute) and func.attr in _SIZE_METHODS and not _is_self(func.value):
                return SIZE
            if isinstance(func, ast.Attribute) and func.attr in ("dim", "ndimension"):
                return COUNT
            if isinstance(func, ast.Name) and func.id == "min" and len(node.args) > 1:
                bounds = [self.bound(arg, depth) for arg in node.args]  # at most its smallest: a count caps it
                return COUNT if COUNT in bounds else _combine(bounds)
            if isinstance(func, ast.Name) and func.id in _COMBINE:
                return _combine([self.bound(arg, depth) for arg in node.args])
            return None
        if isinstance(node, ast.Attribute):
            if node.attr == "shape" or (node.attr in _SIZE_ATTRS and self.kind(node.value) == ARRAY):
                return SIZE
            if node.attr == "ndim" or _is_self(node.value):
                return COUNT  # ``range(self.num_joints)``: a count the dataset was configured with, not a sample's size
            return None
        if isinstance(node, ast.Subscript):
            return self.bound(node.value, depth)
        if isinstance(node, ast.BinOp):
            return _combine([self.bound(node.left, depth), self.bound(node.right, depth)])
        if isinstance(node, ast.Name):
            binding = self._binding(node)
            if binding is None:
                return None
            statement, outer, named, _ = binding
            value = getattr(statement, "value", None)
            if value is None or isinstance(statement, (ast.arg, ast.For, ast.AsyncFor, ast.comprehension)):
                return None
            source = value if named is outer else _unpacked(outer, named, value)
            if source is None:
                return self.bound(value, depth)  # h, w = img.shape[-2:]
            return self.bound(source, depth)
        return None


def _is_container(name: str, scope: ast.AST) -> bool:
    """Whether a transform's input is used as a dict, tuple or list (``sample["image"]``,
    ``img, target = sample``, ``for crop in crops``, ``sample.items()``)."""
    def named(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == name

    for node in ast.walk(scope):
        if isinstance(node, ast.Subscript) and named(node.value):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                return True
        elif isinstance(node, ast.Assign) and named(node.value):
            if any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
                return True
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            iterable = node.iter
            parts = iterable.args if isinstance(iterable, ast.Call) else [iterable]
            if any(named(part) for part in parts):
                return True
        elif isinstance(node, ast.Attribute) and named(node.value) and node.attr in _CONTAINER_METHODS:
            return True
        elif isinstance(node, ast.Starred) and named(node.value):
            return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            if len(node.args) == 2 and named(node.args[0]) and _CONTAINER_TYPES & {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}:
                return True
    return False


def _combine(bounds: list[str | None]) -> str | None:
    if SIZE in bounds:
        return SIZE
    return COUNT if bounds and all(b == COUNT for b in bounds) else None


def _unpacked(outer: ast.AST, named: ast.AST, value: ast.AST) -> ast.AST | None:
    """In ``a, b = x, y``, the part of the value that ``named`` receives; None when not written out."""
    if isinstance(outer, ast.Tuple) and isinstance(value, ast.Tuple) and len(outer.elts) == len(value.elts):
        for element, source in zip(outer.elts, value.elts):
            if element is named:
                return source
    return None


def _target_naming(target: ast.AST, name: str) -> ast.AST | None:
    """The Name node inside a (possibly unpacking) target that binds ``name`` (not one read in
    ``t[i] = ...``)."""
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and node.id == name:
            return node
        if isinstance(node, (ast.Tuple, ast.List, ast.Starred)):
            stack.extend(node.elts if not isinstance(node, ast.Starred) else [node.value])
    return None
