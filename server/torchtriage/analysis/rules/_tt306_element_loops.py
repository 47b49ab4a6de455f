"""Which loops of data code run once per element (or row, or pixel) of an array (for TT306).

A ``for`` loop or a comprehension walks elements when its iterable is an
array or a list of an array's elements (see :mod:`._tt306_arrays`), or when it is a
``range`` whose bound is an array's size; a ``range`` of unknown bound counts
when its index picks single elements of an array in the body (``img[0, y, x]``,
``pixels[x, y]``, ``t[i]``).  ``zip`` walks elements only when all its parts
do (``zip(tensor, mean, std)`` is three channels).  Nested loops give one
answer, for the outermost that walks.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator

from ._tt306_arrays import ARRAY, COUNT, ELEMENTS, INDEX_SOURCES, SIZE, Arrays
from ._spans import loop_header

if TYPE_CHECKING:
    from .base import RuleContext

_DISTINCT = frozenset({"numpy.unique", "torch.unique"})  # a loop over these walks distinct values, few
_UNWRAP = frozenset({"enumerate", "reversed", "sorted", "iter"})
_TO_LIST = frozenset({"tolist", "numpy"})
_PIXEL_CALLS = frozenset({"getpixel", "putpixel"})
# range(stop), range(start, stop), torch.arange(...), torch.randperm(n), np.random.permutation(n)
_STOP_ARGUMENT = frozenset({"range", "torch.arange", "numpy.arange", "torch.randperm", "numpy.random.permutation"})
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

# (the loop or comprehension, the node to report, its iterable, its target)
ElementLoop = tuple[ast.AST, ast.AST, ast.expr, ast.AST]


def _names(node: ast.AST | None) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()


def walk_body(nodes: list[ast.AST]) -> Iterator[ast.AST]:
    """Nodes under ``nodes``, not entering nested function or class definitions."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed([c for c in ast.iter_child_nodes(node) if not isinstance(c, _NESTED)]))


def yields(loop: ast.For | ast.AsyncFor) -> bool:
    """The loop of ``__iter__`` that produces the samples: one pass per sample is its job."""
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk_body(list(loop.body)))


class ElementLoops:
    """Which loops run once per element (or row, or pixel) of an array."""

    def __init__(self, ctx: "RuleContext", arrays: Arrays) -> None:
        self.ctx = ctx
        self.arrays = arrays
        arrays.walks = lambda generator, comprehension: self.walks(generator.iter, generator.target, [comprehension])

    def walks(self, iterable: ast.expr, target: ast.AST | None, body: list[ast.AST]) -> bool:
        """Whether ``for target in iterable: body`` visits an array's elements, rows or pixels."""
        while isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args:
            name = iterable.func.id
            if name in _UNWRAP and name not in self.ctx.aliases:
                iterable = iterable.args[0]
            elif name == "zip" and name not in self.ctx.aliases:  # as long as its shortest part
                return all(self.walks(part, None, body) for part in iterable.args)
            else:
                break
        if self._distinct_values(iterable):
            return False  # ``for value in np.unique(mask)``: the few distinct labels, not the elements
        stop = self._range_stop(iterable)
        if stop is not None and body and self._listed(stop, body[0]):
            return False  # ``[self.X[i][idx] for i in range(len(self.X))]`` under ``if isinstance(self.X, list):``: the inputs
        if stop is not None:
            bound = self.arrays.bound(stop) if isinstance(stop, ast.expr) else None
            if bound == SIZE:  # as many iterations as a dimension has, unless each takes a whole slice
                return not self._whole_slices(_names(target), body)
            return bound != COUNT and self._indexes_array(_names(target), body)
        return self.arrays.kind(iterable) in (ARRAY, ELEMENTS)

    def _listed(self, stop: ast.expr | bool, near: ast.AST) -> bool:
        """``len(x)`` where an enclosing ``if isinstance(x, list):`` (or ``tuple``) holds ``near``: a list of
        arrays (a model's several inputs), as many as there are inputs, not elements."""
        if not (isinstance(stop, ast.Call) and isinstance(stop.func, ast.Name) and stop.func.id == "len" and len(stop.args) == 1):
            return False
        subject = ast.dump(stop.args[0])
        path = {id(a) for a in self.ctx.ancestors(near)} | {id(near)}
        for ancestor in self.ctx.ancestors(near):
            test = ancestor.test if isinstance(ancestor, ast.If) else None
            if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
                    and len(test.args) == 2):
                continue
            kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
            if ast.dump(test.args[0]) == subject and {getattr(k, "id", "") for k in kinds} <= {"list", "tuple"} \
                    and any(id(statement) in path for statement in ancestor.body):  # type: ignore[union-attr]
                return True
        return False

    def _distinct_values(self, iterable: ast.expr, depth: int = 0) -> bool:
        """``np.unique(x)``, ``torch.unique(x)``, ``x.unique()``, or a name last bound to one."""
        if isinstance(iterable, ast.Name) and depth < 3:
            value = self.arrays.value_of(iterable)
            return value is not None and self._distinct_values(value, depth + 1)
        if not isinstance(iterable, ast.Call):
            return False
        if isinstance(iterable.func, ast.Attribute) and iterable.func.attr == "unique" and not iterable.args:
            return True
        return (self.ctx.qualname(iterable.func) or "") in _DISTINCT

    def _range_stop(self, iterable: ast.expr, depth: int = 0) -> ast.expr | bool | None:
        """For a range of indices (``range(n)``, ``torch.randperm(n).tolist()``): its stop, or True
        when it cannot be read; None when ``iterable`` is not a range of indices."""
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
            if iterable.func.attr in _TO_LIST and not iterable.args:
                return self._range_stop(iterable.func.value, depth)
        if isinstance(iterable, ast.Name) and depth < 3:  # perm = torch.randperm(n).tolist()
            value = self.arrays.value_of(iterable)
            return self._range_stop(value, depth + 1) if value is not None else None
        if not isinstance(iterable, ast.Call):
            return None
        qualname = self.ctx.qualname(iterable.func) or ""
        if qualname == "list" and len(iterable.args) == 1:
            return self._range_stop(iterable.args[0], depth)
        if qualname in _STOP_ARGUMENT and iterable.args and not isinstance(iterable.args[0], ast.Starred):
            positional = iterable.args
            return positional[1] if qualname.endswith("range") and len(positional) > 1 else positional[0]
        return True if qualname in INDEX_SOURCES else None

    def _whole_slices(self, names: set[str], body: list[ast.AST]) -> bool:
        """Whether the loop's index is never read, or only ever used to take a whole row or column:
        ``X[:, i]``, ``padded[i, :n]`` (every other position a slice).  Each iteration is then one tensor
        op, not one element (dlrm's per-feature ``[X_cat[:, i] for i in range(X_cat.shape[1])]`` and
        ``[torch.tensor(range(n)) for _ in range(X_cat.shape[1])]``): a loop touches elements only
        through its index."""
        if not names:
            return False  # (a part of a ``zip``: judged without its target)
        uses = [n for n in walk_body(body) if isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load)]
        if not uses:
            return True
        sliced: list[ast.Name] = []
        for node in walk_body(body):
            if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple)):
                continue
            parts = node.slice.elts
            indexed = [p for p in parts if _names(p) & names]
            if len(indexed) == 1 and len(parts) > 1 and all(isinstance(p, ast.Slice) for p in parts if p is not indexed[0]):
                sliced += [n for n in ast.walk(indexed[0]) if isinstance(n, ast.Name) and n.id in names]
        return len(sliced) == len(uses)

    def _indexes_array(self, names: set[str], body: list[ast.AST]) -> bool:
        """Whether the loop's index reads or writes single elements of an array in its body."""
        if not names:
            return False
        for node in walk_body(body):
            if isinstance(node, ast.Subscript) and _names(node.slice) & names:
                multi = isinstance(node.slice, ast.Tuple) and len(node.slice.elts) > 1
                if multi or self.arrays.kind(node.value) == ARRAY:
                    return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PIXEL_CALLS:
                if any(_names(arg) & names for arg in node.args):
                    return True
        return False

    def find(self, nodes: list[ast.AST], skip: set[int]) -> Iterator[ElementLoop]:
        """The outermost loops and comprehensions under ``nodes`` that walk elements (ids in
        ``skip`` are passed over, and found ones are added to it)."""
        stack = list(reversed(nodes))
        while stack:
            node = stack.pop()
            if id(node) in skip:
                continue
            found: ElementLoop | None = None
            if isinstance(node, (ast.For, ast.AsyncFor)) and not yields(node):
                if self.walks(node.iter, node.target, list(node.body)):
                    found = (node, loop_header(node), node.iter, node.target)
            elif isinstance(node, _COMPREHENSIONS):
                generator = next((g for g in node.generators if self.walks(g.iter, g.target, [node])), None)
                if generator is not None:
                    found = (node, node, generator.iter, generator.target)
            if found is None:
                stack.extend(reversed([c for c in ast.iter_child_nodes(node) if not isinstance(c, _NESTED)]))
                continue
            skip.add(id(node))
            yield found
