"""Parse a module in chunks, and re-parse only the chunks an edit touched.

A *chunk* is a run of whole lines holding one or more top-level statements
(plus the comments and blank lines after them) that parses on its own.  The
module's ast, its nodes in walk order and their parents are assembled from
the chunks, so after an edit inside one function only that function's lines
are parsed and walked again; the chunks after it are reused, their line
numbers shifted when the edit added or removed lines.

Why this is exact: a top-level statement always starts at column 0 with no
open bracket, string or line continuation behind it, so the tokenizer is in
the same state at a chunk's first line whether it reads the chunk alone or
after the chunks before it.  When the re-parsed region does not parse on its
own (an unclosed bracket that the next chunk might close, a decorator without
its ``def`` ...) the whole module is parsed instead, which also gives the
true syntax error.  ``tests/analysis/test_incremental.py`` checks the result
against a full parse over thousands of random edits.

The chunks of the previous version are reused *in place*: a version handed to
:func:`reparse` must not be used afterwards (the language server keeps one
per document and analyses a document's versions one at a time).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterable

from ..findings import Finding
from .parsing import PARSE_ERRORS, compile_tree, parse_source
from .text import split_lines

__all__ = ["Chunk", "ParsedModule", "parse_module", "reparse", "walk_module"]


@dataclass(eq=False)
class Chunk:
    """Lines ``[first, first + len(lines))`` (0-based) of the module and what they parse to."""

    first: int
    lines: list[str]
    statements: list[ast.stmt]
    nodes: list[ast.AST]  # the statements, then their descendants, breadth first
    parents: dict[ast.AST, ast.AST]  # parent of every descendant (not of the statements)
    _by_type: dict[object, list[ast.AST]] = field(default_factory=dict, repr=False)

    @property
    def end(self) -> int:
        return self.first + len(self.lines)

    def nodes_of(self, types: type | tuple[type, ...]) -> list[ast.AST]:
        """The chunk's nodes of the given ast types, in walk order (kept while the chunk lives)."""
        found = self._by_type.get(types)
        if found is None:
            found = self._by_type[types] = [node for node in self.nodes if isinstance(node, types)]
        return found


@dataclass(eq=False)
class ParsedModule:
    """One version of a module: its source, ast, nodes in walk order and parents."""

    source: str
    lines: list[str]  # with their line ends
    chunks: list[Chunk]
    top_level_await: bool
    tree: ast.Module
    nodes: tuple[ast.AST, ...]
    parents: dict[ast.AST, ast.AST]
    reparsed_lines: int  # how many lines this version parsed (all of them for a full parse)
    _by_type: dict[object, tuple[ast.AST, ...]] = field(default_factory=dict, repr=False)

    def nodes_of(self, types: type | tuple[type, ...]) -> tuple[ast.AST, ...]:
        """Every node of the given ast types in walk order, from the chunks' own indexes."""
        found = self._by_type.get(types)
        if found is None:
            head = (self.tree,) if isinstance(self.tree, types) else ()
            found = self._by_type[types] = head + tuple(n for chunk in self.chunks for n in chunk.nodes_of(types))
        return found


def _shift_node(node: ast.AST, delta: int) -> None:
    if "lineno" in node._attributes:
        node.lineno += delta  # type: ignore[attr-defined]
        if node.end_lineno is not None:  # type: ignore[attr-defined]
            node.end_lineno += delta  # type: ignore[attr-defined]


def _walk(statements: list[ast.stmt], line_shift: int) -> tuple[list[ast.AST], dict[ast.AST, ast.AST]]:
    """Breadth-first nodes under ``statements`` and their parents, shifting line numbers on the way."""
    nodes: list[ast.AST] = list(statements)
    parents: dict[ast.AST, ast.AST] = {}
    index = 0
    while index < len(nodes):
        node = nodes[index]
        index += 1
        if line_shift:
            _shift_node(node, line_shift)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr_context):
                continue  # Load/Store/Del: shared singletons, nobody's child in particular
            parents[child] = node
            nodes.append(child)
    return nodes, parents


def _statement_start(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", ())
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _group(statements: list[ast.stmt]) -> list[list[ast.stmt]]:
    """Top-level statements grouped so that no two groups share a line (``a = 1; b = 2``)."""
    groups: list[list[ast.stmt]] = []
    last_end = 0
    for statement in statements:
        if groups and _statement_start(statement) <= last_end:
            groups[-1].append(statement)
        else:
            groups.append([statement])
        last_end = max(last_end, statement.end_lineno or statement.lineno)
    return groups


def walk_module(tree: ast.Module) -> tuple[tuple[ast.AST, ...], dict[ast.AST, ast.AST]]:
    """Every node of a module and each node's parent, in the order a chunked parse gives:
    the module, then statement group by statement group, each breadth first."""
    nodes: list[ast.AST] = [tree]
    parents: dict[ast.AST, ast.AST] = {}
    for group in _group(tree.body):
        for statement in group:
            parents[statement] = tree
        group_nodes, group_parents = _walk(group, 0)
        parents.update(group_parents)
        nodes.extend(group_nodes)
    return tuple(nodes), parents


def _chunk(lines: list[str], first: int, statements: list[ast.stmt], line_shift: int) -> list[Chunk]:
    """Split lines ``first..`` that parsed to ``statements`` (line numbers off by ``line_shift``)
    into chunks, one per group of statements that share lines."""
    groups = _group(statements)
    chunks: list[Chunk] = []
    # A group's chunk starts at its first line (the first chunk also takes any lines before it).
    starts = [first] + [_statement_start(group[0]) - 1 + line_shift for group in groups[1:]]
    ends = starts[1:] + [first + len(lines)]
    for group_index, (start, end) in enumerate(zip(starts, ends)):
        group = groups[group_index] if groups else []
        nodes, parents = _walk(group, line_shift)
        chunks.append(Chunk(start, lines[start - first : end - first], group, nodes, parents))
    if not groups:
        chunks = [Chunk(first, lines, [], [], {})]
    return chunks


def _assemble(source: str, lines: list[str], chunks: list[Chunk], top_level_await: bool, reparsed: int) -> ParsedModule:
    tree = ast.Module(body=[s for chunk in chunks for s in chunk.statements], type_ignores=[])
    nodes: list[ast.AST] = [tree]
    parents: dict[ast.AST, ast.AST] = {}
    for chunk in chunks:
        for statement in chunk.statements:
            parents[statement] = tree
        parents.update(chunk.parents)
        nodes.extend(chunk.nodes)
    return ParsedModule(source, lines, chunks, top_level_await, tree, tuple(nodes), parents, reparsed)


def parse_module(source: str, path: str = "<string>", top_level_await: bool = False) -> ParsedModule | Finding:
    """Parse the whole module into chunks, or a TT000 finding for a syntax error."""
    tree = parse_source(source, path, top_level_await)
    if isinstance(tree, Finding):
        return tree
    lines = split_lines(source, keepends=True)
    return _assemble(source, lines, _chunk(lines, 0, tree.body, 0), top_level_await, len(lines))


def _common_prefix(old: list[str], new: list[str]) -> int:
    limit = min(len(old), len(new))
    index = 0
    while index < limit and old[index] == new[index]:
        index += 1
    return index


def _common_suffix(old: list[str], new: list[str], prefix: int) -> int:
    limit = min(len(old), len(new)) - prefix
    count = 0
    while count < limit and old[-1 - count] == new[-1 - count]:
        count += 1
    return count


def _shift(chunks: Iterable[Chunk], delta: int) -> None:
    """Move chunks (and every line number in them) down by ``delta`` lines."""
    for chunk in chunks:
        chunk.first += delta
        for node in chunk.nodes:
            _shift_node(node, delta)


def reparse(previous: ParsedModule, source: str, path: str = "<string>") -> ParsedModule | Finding:
    """The new version of ``previous`` after an edit, re-parsing only the chunks the edit touched.

    ``previous`` is consumed (its unchanged chunks move into the result).
    """
    if source == previous.source:
        return previous
    lines = split_lines(source, keepends=True)
    old = previous.lines
    if "barry_as_FLUFL" in source or not old or not lines:  # a __future__ that changes the grammar
        return parse_module(source, path, previous.top_level_await)
    prefix = _common_prefix(old, lines)
    suffix = _common_suffix(old, lines, prefix)
    # The old lines that changed, widened by one line each side so an edit at a chunk
    # boundary (a new statement, a decorator, a continuation) re-parses both neighbours.
    low, high = prefix - 1, len(old) - suffix + 1
    chunks = previous.chunks
    touched = [i for i, chunk in enumerate(chunks) if chunk.first < high and chunk.end > low]
    if not touched:
        touched = [len(chunks) - 1]
    first_index, last_index = touched[0], touched[-1]
    delta = len(lines) - len(old)
    start, stop = chunks[first_index].first, chunks[last_index].end + delta
    region = "".join(lines[start:stop])
    try:
        tree = compile_tree(region, path, previous.top_level_await)
    except PARSE_ERRORS:
        return parse_module(source, path, previous.top_level_await)  # the true error, or a multi-chunk construct
    after = chunks[last_index + 1 :]
    if delta:
        _shift(after, delta)
    middle = _chunk(lines[start:stop], start, tree.body, start)
    return _assemble(source, lines, chunks[:first_index] + middle + after, previous.top_level_await, stop - start)
