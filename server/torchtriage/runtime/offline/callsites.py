"""Which line of a user function made a call, when the trace only names the function.

A trace's Python frames carry no call-site line: a frame entered while the
profiler ran is named by its ``def`` line, one already running by the line it
was on when recording began (``/work/shared/notes/profiler.md``).  Without
source the answer is function-level.  When the file is found on this machine,
the call is looked up in the function's body by the callee's name: the C call
``<built-in method mm ...>`` is the line that calls ``.mm(`` / ``mm(``, a Python
function ``heavy`` the line that calls ``heavy(``, a module call
``nn.Module: Linear_0`` a call of a name that was assigned ``Linear(...)`` in
the file (``model = nn.Linear(...)``, ``self.fc = Linear(...)``), an operator
reached through Python syntax (``a @ b`` -> ``aten::matmul``) the line with that
operator, the loader's ``__next__`` the ``for`` line.  torch.profiler's own calls
(``prof.step()``) are told from the others (``opt.step()``) by the name the
``profile(...)`` object was bound to.  Only a name met on exactly one line of
the function counts; else None, and the caller (``sweep``) tries the names of
the library functions the call ran (a decorator's ``wrapper`` runs ``step``)
before it falls back to the ``def`` line.  Nested functions, classes and
lambdas are their own frames and are left out of the enclosing function's body.
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path
from typing import Optional

from .frames import MODULE_CALL

MAX_SOURCE_BYTES = 2_000_000
# Python syntax -> the names of the aten ops it dispatches to
_OPERATORS: dict[type, tuple[str, ...]] = {
    ast.MatMult: ("matmul", "mm", "bmm"), ast.Mult: ("mul",), ast.Add: ("add",), ast.Sub: ("sub", "rsub"),
    ast.Div: ("div",), ast.FloorDiv: ("floor_divide", "div"), ast.Pow: ("pow",), ast.Mod: ("remainder",),
    ast.BitAnd: ("bitwise_and",), ast.BitOr: ("bitwise_or",), ast.USub: ("neg",),
}
_INDEXING = ("index", "select", "slice", "index_put_", "copy_")
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class _Body:
    """One function's calls: callee name -> (line, receiver) pairs; and its ``def`` line."""

    def __init__(self, def_line: int) -> None:
        self.def_line = def_line
        self.calls: dict[str, set[tuple[int, str]]] = collections.defaultdict(set)

    def add(self, name: str, line: int, receiver: str = "") -> None:
        if name:
            self.calls[name].add((line, receiver))

    def lines(self, name: str) -> set[tuple[int, str]]:
        return self.calls.get(name, set())


class _File:
    """A parsed source file: its functions by name with their line spans, and which names hold which module classes."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions: dict[str, list[tuple[int, int, ast.AST]]] = collections.defaultdict(list)
        self.module_body = _Body(1)
        self.bodies: dict[int, _Body] = {}
        self.classes: dict[str, set[str]] = collections.defaultdict(set)  # class name -> names assigned an instance of it
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                self.functions[node.name].append((first, getattr(node, "end_lineno", node.lineno) or node.lineno, node))
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                cls = _constructed(node.value)
                for target in node.targets:
                    name = _callee(target)
                    if cls and name:
                        self.classes[cls].add(name)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    name = _callee(item.optional_vars) if item.optional_vars is not None else ""
                    if isinstance(item.context_expr, ast.Call) and name:
                        self.classes[_constructed(item.context_expr)].add(name)
        self._fill(self.module_body, tree.body)

    def body(self, function: str, line: int) -> Optional[_Body]:
        if function == "<module>":
            return self.module_body
        spans = [s for s in self.functions.get(function, ()) if s[0] <= line <= s[1]]
        if not spans:
            return None
        first, _, node = max(spans, key=lambda s: s[0])
        body = self.bodies.get(id(node))
        if body is None:
            body = self.bodies[id(node)] = _Body(node.lineno)  # type: ignore[attr-defined]
            self._fill(body, node.body)  # type: ignore[attr-defined]
        return body

    @staticmethod
    def _fill(body: _Body, statements: list[ast.stmt]) -> None:
        stack: list[ast.AST] = list(statements)
        while stack:
            node = stack.pop()
            if isinstance(node, _NESTED):
                continue
            line = getattr(node, "lineno", 0)
            if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):  # the loop asks its iterator for items
                for name in ("__next__", "__iter__"):
                    body.add(name, getattr(node, "lineno", 0) or getattr(node.iter, "lineno", 0))
            if isinstance(node, ast.Call):
                func = node.func
                receiver = _callee(func.value) if isinstance(func, ast.Attribute) else ""
                body.add(_callee(func), line, receiver)
            elif isinstance(node, (ast.BinOp, ast.AugAssign, ast.UnaryOp)):
                for name in _OPERATORS.get(type(node.op), ()):
                    body.add(name, line)
            elif isinstance(node, ast.Subscript):
                for name in _INDEXING:
                    body.add(name, line)
            stack.extend(ast.iter_child_nodes(node))


def _constructed(call: ast.Call) -> str:
    """The class a call builds, through chained calls: ``Net().to(device)`` -> "Net"."""
    while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        call = call.func.value
    return _callee(call.func)


def _callee(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


class CallSites:
    """Answers ``line(path, function, line, callee)``; each file is parsed once."""

    def __init__(self) -> None:
        self._files: dict[str, Optional[_File]] = {}

    def _file(self, path: str) -> Optional[_File]:
        if path not in self._files:
            parsed = None
            try:
                source = Path(path)
                if source.is_file() and source.stat().st_size <= MAX_SOURCE_BYTES:
                    parsed = _File(ast.parse(source.read_bytes(), filename=path))
            except (OSError, SyntaxError, ValueError, RecursionError):
                parsed = None
            self._files[path] = parsed
        return self._files[path]

    def def_line(self, path: str, function: str, line: int) -> int:
        """The function's ``def`` line (``line`` itself when the source is not here)."""
        parsed = self._file(path)
        body = parsed.body(function, line) if parsed is not None else None
        return body.def_line if body is not None and function != "<module>" else line

    def line(self, path: str, function: str, line: int, callee: str, profiler: bool = False) -> Optional[int]:
        """The one line of the function (the frame ``path(line): function``) that calls ``callee``: a Python
        function's or C function's name, ``nn.Module: Linear_0``, or an op (``aten::mm``); None when unknown.
        ``profiler``: the callee is torch.profiler's code (``prof.step()``): only calls on a name bound to
        ``profile(...)`` count, which the other callees leave out (``opt.step()`` beside ``prof.step()``)."""
        parsed = self._file(path)
        body = parsed.body(function, line) if parsed is not None else None
        if body is None:
            return None
        found = self._lines(parsed, body, callee)  # type: ignore[arg-type]
        profilers = parsed.classes.get("profile", set())  # type: ignore[union-attr]
        if profilers:
            mine = {c for c in found if (c[1] in profilers) == profiler}
            found = mine or found
        lines = {c[0] for c in found}
        return next(iter(lines)) if len(lines) == 1 else None

    @staticmethod
    def _lines(parsed: _File, body: _Body, callee: str) -> set[tuple[int, str]]:
        if callee.startswith(MODULE_CALL):
            cls = callee[len(MODULE_CALL):].rsplit("_", 1)[0]
            found: set[tuple[int, str]] = set()
            for name in parsed.classes.get(cls, ()):
                found |= body.lines(name)
            return found
        if "::" in callee:  # an op with no Python call in between: syntax, or a tensor method torch did not trace
            name = callee.split("::", 1)[1]
            found = set(body.lines(name))
            if not found and name.endswith("_"):
                found = set(body.lines(name[:-1]))
            return found
        return set(body.lines(callee))
