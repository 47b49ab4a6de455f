"""Which line of a function an operator-slot op came from, read from the source.

Ops reached through operator slots (``h * scale``, ``a @ b``, ``x + y``) have no
Python call event: the event tree places them only in their function, and frame
samples rarely catch an op of a few microseconds.  For one such op, the
function's source says where it can be: the lines with a matching binary
operator (``aten::mul`` -> ``*`` or ``*=``).  When several lines qualify, a name
the op's operand is known by (a module buffer's name, the variable a tensor was
assigned to) picks the line that uses it.  Unknown or ambiguous: None.
"""

from __future__ import annotations

import ast
from pathlib import Path

OPERATORS: dict[str, type[ast.operator]] = {
    "mul": ast.Mult,
    "add": ast.Add,
    "sub": ast.Sub,
    "rsub": ast.Sub,
    "div": ast.Div,
    "true_divide": ast.Div,
    "floor_divide": ast.FloorDiv,
    "matmul": ast.MatMult,
    "mm": ast.MatMult,
    "bmm": ast.MatMult,
    "pow": ast.Pow,
    "remainder": ast.Mod,
}


def _operator(op: str) -> type[ast.operator] | None:
    """The AST operator an aten op name stands for (``aten::mul_`` -> Mult), or None."""
    name = op.split("::", 1)[-1]
    if "Backward" in name:  # an autograd node: MulBackward0 -> mul
        name = name.split("Backward", 1)[0].lower()
    return OPERATORS.get(name.rstrip("_"))


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _own_nodes(root: ast.AST) -> list[ast.AST]:
    """The nodes of a function (or module) body, without those of the functions and classes defined in it."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPES):
            continue  # its own frame
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _names(node: ast.AST) -> set[str]:
    """Variable and attribute names an expression mentions."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


class SourceOps:
    """Parses each file once; answers ``line_of`` and ``assigned_name``."""

    def __init__(self) -> None:
        self._trees: dict[str, ast.Module | None] = {}

    def _tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            try:
                self._trees[path] = ast.parse(Path(path).read_text(encoding="utf-8", errors="replace"))
            except (OSError, SyntaxError, ValueError):
                self._trees[path] = None
        return self._trees[path]

    def _function(self, path: str, function: str, first_line: int) -> ast.AST | None:
        """The def whose first line (its first decorator's, as Python counts it) is ``first_line``; the module for ``<module>``."""
        tree = self._tree(path)
        if tree is None or function == "<module>":
            return tree
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if first == first_line or node.lineno == first_line:
                    return node
        return None

    def line_of(self, path: str, function: str, first_line: int, op: str, hints: set[str] = frozenset()) -> int | None:
        """The one line of ``function`` where ``op`` can come from, or None."""
        kind = _operator(op)
        node = self._function(path, function, first_line) if kind is not None else None
        if node is None:
            return None
        candidates: dict[int, set[str]] = {}
        for sub in _own_nodes(node):
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, kind):
                candidates.setdefault(sub.lineno, set()).update(_names(sub))
            elif isinstance(sub, ast.AugAssign) and isinstance(sub.op, kind):
                candidates.setdefault(sub.lineno, set()).update(_names(sub))
        if len(candidates) > 1 and hints:
            candidates = {line: names for line, names in candidates.items() if names & hints}
        return next(iter(candidates)) if len(candidates) == 1 else None

    def assigned_name(self, path: str, line: int) -> str:
        """The simple name (or attribute) a statement on ``line`` assigns, '' when none."""
        tree = self._tree(path)
        if tree is None:
            return ""
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno == line:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        return target.id
                    if isinstance(target, ast.Attribute):
                        return target.attr
        return ""
