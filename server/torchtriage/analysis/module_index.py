"""The syntax facts of one parsed module, indexed once: nodes, parents, names, imports, positions.

The bottom of the analysis stage above parsing: the hot-loop finder and the
rule context build on it.  Parsing uses the stdlib ``ast`` (about 14x faster
than libcst here); libcst is only used to build fixes, on the snippet being
fixed (see :mod:`torchtriage.analysis.fixes`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Iterator

from ..findings import Span
from .incremental.reparse import walk_module
from .text import line_offsets, split_lines

if TYPE_CHECKING:
    from .incremental.reparse import ParsedModule


def _import_aliases(nodes: tuple[ast.AST, ...]) -> dict[str, str]:
    """Local name -> dotted qualified name, for every import anywhere in the module."""
    aliases: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name != "*":
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


@dataclass
class ModuleIndex:
    """The syntax facts of one module: nodes, parents, names, imports, positions (no settings, no hot loops)."""

    source: str
    tree: ast.Module
    path: str = "<string>"
    # Per-module memo for rule helpers (e.g. tensor names per region), keyed by helper.
    memo: dict[object, object] = field(default_factory=dict, repr=False, compare=False)
    # Nodes and parents already collected chunk by chunk (see :mod:`.incremental`).
    parsed: "ParsedModule | None" = field(default=None, repr=False, compare=False)

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(self.source)

    @cached_property
    def _walked(self) -> tuple[tuple[ast.AST, ...], dict[ast.AST, ast.AST]]:
        if self.parsed is not None and self.parsed.tree is self.tree:
            return self.parsed.nodes, self.parsed.parents
        return walk_module(self.tree)

    @cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        return self._walked[1]

    @cached_property
    def all_nodes(self) -> tuple[ast.AST, ...]:
        """Every node of the module, collected once: the module, then each group of top-level
        statements breadth first (the order a chunked parse builds, see :mod:`.incremental`).

        ``Load``/``Store``/``Del`` are left out (shared singletons); operators, also shared,
        are in it but their ``parents`` entry means nothing.
        """
        return self._walked[0]

    def nodes_of(self, types: type | tuple[type, ...]) -> tuple[ast.AST, ...]:
        """The module's nodes of the given ast types, in ``all_nodes`` order.

        Rules looking for calls (or loops, or definitions) scan this instead of every node;
        after an edit the per-chunk indexes of untouched chunks are reused.
        """
        if self.parsed is not None and self.parsed.tree is self.tree:
            return self.parsed.nodes_of(types)
        key = ("nodes_of", types)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = tuple(node for node in self.all_nodes if isinstance(node, types))
        return found  # type: ignore[return-value]

    @cached_property
    def functions(self) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
        """Every function and method of the module by name (several per name), in node order."""
        table: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for node in self.nodes_of((ast.FunctionDef, ast.AsyncFunctionDef)):
            assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            table.setdefault(node.name, []).append(node)
        return table

    @cached_property
    def aliases(self) -> dict[str, str]:
        return _import_aliases(self.nodes_of((ast.Import, ast.ImportFrom)))

    # --- names -------------------------------------------------------------

    def dotted(self, node: ast.AST) -> str | None:
        """``a.b.c`` for a Name/Attribute chain, without alias resolution."""
        if isinstance(node, ast.Name):
            return node.id
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        return None

    def qualname(self, node: ast.AST) -> str | None:
        """Dotted name with the first part resolved through the module's imports."""
        try:
            return self._qualnames[node]
        except KeyError:
            qualname = self._qualnames[node] = self._resolve_qualname(node)
            return qualname

    @cached_property
    def _qualnames(self) -> dict[ast.AST, str | None]:
        return {}

    def _resolve_qualname(self, node: ast.AST) -> str | None:
        dotted = self.dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        resolved = self.aliases.get(head, head)
        return f"{resolved}.{rest}" if rest else resolved

    def call_qualname(self, node: ast.AST) -> str | None:
        return self.qualname(node.func) if isinstance(node, ast.Call) else None

    def names_ending_in(self, lasts: frozenset[str]) -> frozenset[str]:
        """The bare names whose qualname ends in one of ``lasts``: each of them unless an import
        rebinds it, and the import aliases that stand for one (``T`` after ``from m import Compose
        as T``).  A call whose function is a bare name outside this set has no such qualname, so
        scans over every call of a module test this first (:func:`may_end_in`) and resolve only the few that pass."""
        aliases = self.aliases
        own = {name for name in lasts if aliases.get(name, name).rsplit(".", 1)[-1] == name}
        return frozenset(own | {alias for alias, target in aliases.items() if target.rsplit(".", 1)[-1] in lasts})

    # --- tree navigation -----------------------------------------------------

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        parent = self.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.parents.get(parent)

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return ancestor
        return None

    def enclosing_class(self, node: ast.AST) -> ast.ClassDef | None:
        """The innermost class whose body holds ``node`` (through its methods), if any."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, ast.ClassDef):
                return ancestor
        return None

    def is_method(self, func: ast.AST) -> bool:
        """Whether a function is defined directly in a class body."""
        return isinstance(self.parents.get(func), ast.ClassDef)

    def enclosing_statement(self, node: ast.AST) -> ast.stmt | None:
        current: ast.AST | None = node
        while current is not None and not isinstance(current, ast.stmt):
            current = self.parents.get(current)
        return current

    # --- positions -----------------------------------------------------------

    def char_column(self, lineno: int, byte_offset: int) -> int:
        """0-based character column for an ast UTF-8 byte offset."""
        if not 1 <= lineno <= len(self.lines):
            return byte_offset
        line = self.lines[lineno - 1]
        if line.isascii():
            return byte_offset
        return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))

    def span(self, node: ast.AST) -> Span:
        """1-based line/column span of an ast node (end exclusive)."""
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        column = self.char_column(line, getattr(node, "col_offset", 0))
        end_offset = getattr(node, "end_col_offset", None)
        end_column = self.char_column(end_line, end_offset) if end_offset is not None else column
        return Span(line, column + 1, end_line, end_column + 1)

    @cached_property
    def line_offsets(self) -> list[int]:
        """String offset of each line start (see :func:`text.line_offsets`), computed once."""
        return line_offsets(self.source)

    @cached_property
    def _lines_with_ends(self) -> list[str]:
        """The source's lines with their line ends: the parse's own where it has them."""
        parsed = self.parsed
        if parsed is not None and parsed.source is self.source:
            return parsed.lines
        return split_lines(self.source, keepends=True)

    def segment(self, node: ast.AST) -> str:
        """The source text of a node, like ``ast.get_source_segment`` but without re-splitting
        the whole file on every call (that made rules quadratic on long files); only the node's
        own lines are encoded (its columns count UTF-8 bytes)."""
        try:
            first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
            start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        except AttributeError:
            return ""
        lines = self._lines_with_ends
        if last is None or end is None or not 0 <= first <= last < len(lines):
            return ""
        if first == last:
            return lines[first].encode("utf-8")[start:end].decode("utf-8", errors="replace")
        parts = [lines[first].encode("utf-8")[start:], *(line.encode("utf-8") for line in lines[first + 1 : last]),
                 lines[last].encode("utf-8")[:end]]
        return b"".join(parts).decode("utf-8", errors="replace")


def may_end_in(func: ast.AST, lasts: frozenset[str], names: frozenset[str]) -> bool:
    """Whether a call's function can have a qualname ending in one of ``lasts``: a method of that name,
    or a bare name in ``names`` (:meth:`ModuleIndex.names_ending_in`, and any names a caller adds).  The
    cheap first test of a scan over every call of a module, before it resolves the few that pass."""
    kind = type(func)
    return (kind is ast.Attribute and func.attr in lasts) or (kind is ast.Name and func.id in names)  # type: ignore[attr-defined]
