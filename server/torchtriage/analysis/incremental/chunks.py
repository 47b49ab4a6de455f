"""The pieces a parsed module is made of: chunks of top-level statements, their nodes in
walk order, and the module assembled from them (see :mod:`.incremental`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from itertools import chain
from typing import Iterable

from .levels import flatten, forest_levels

__all__ = [
    "Chunk", "ParsedModule", "assemble", "chunk_statements", "group_statements", "shift_chunks", "shift_node",
    "statement_start", "walk_module",
]


_BUCKETED = 512  # nodes: from this size on a chunk sorts its nodes by type once


@dataclass(eq=False)
class Chunk:
    """Lines ``[first, first + len(lines))`` (0-based) of the module and what they parse to."""

    first: int
    lines: list[str]
    statements: list[ast.stmt]
    nodes: list[ast.AST]  # the statements, then their descendants, breadth first
    _by_type: dict[object, list[ast.AST]] = field(default_factory=dict, repr=False)
    _buckets: dict[type, list[ast.AST]] | None = field(default=None, repr=False)

    @property
    def end(self) -> int:
        return self.first + len(self.lines)

    def nodes_of(self, types: type | tuple[type, ...]) -> list[ast.AST]:
        """The chunk's nodes of the given ast types, in walk order (kept while the chunk lives)."""
        found = self._by_type.get(types)
        if found is None:
            found = self._by_type[types] = self._select(types)
        return found

    def renewed(self) -> None:
        """Forget the type indexes: ``nodes`` changed (an edit inside one of the statements)."""
        self._by_type = {}
        self._buckets = None

    def _select(self, types: type | tuple[type, ...]) -> list[ast.AST]:
        """For a long chunk (a 740-line function, re-indexed after every edit inside it), one pass
        sorts the nodes into per-type buckets (each in walk order) and a request for several
        types picks the nodes of their buckets' types in one pass; a short one is simply filtered."""
        if len(self.nodes) < _BUCKETED:
            return [node for node in self.nodes if isinstance(node, types)]
        if self._buckets is None:
            buckets: dict[type, list[ast.AST]] = {}
            for node in self.nodes:
                kind = type(node)
                bucket = buckets.get(kind)
                if bucket is None:
                    buckets[kind] = [node]
                else:
                    bucket.append(node)
            self._buckets = buckets
        kinds = [kind for kind in self._buckets if issubclass(kind, types)]
        if not kinds:
            return []
        if len(kinds) == 1:
            return self._buckets[kinds[0]]
        wanted = frozenset(kinds)  # (one pass: cheaper than merging the buckets back into walk order)
        return [node for node in self.nodes if type(node) in wanted]


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
    # Per type: the module's nodes of that type, and where each chunk's start in it (one more
    # entry than chunks), so the next version splices in only the chunks an edit changed.
    _by_type: dict[object, tuple[ast.AST, ...]] = field(default_factory=dict, repr=False)
    _offsets: dict[object, list[int]] = field(default_factory=dict, repr=False)
    # Whole-module results of the previous version that check for themselves whether they still
    # hold (see :mod:`.hot_reuse`), by name; handed on from version to version by a re-parse.
    carried: dict[str, object] = field(default_factory=dict, repr=False)

    def nodes_of(self, types: type | tuple[type, ...]) -> tuple[ast.AST, ...]:
        """Every node of the given ast types in walk order, from the chunks' own indexes."""
        found = self._by_type.get(types)
        if found is None:
            if isinstance(self.tree, types):  # (``ast.AST`` and the like: not worth splicing)
                return (self.tree,) + tuple(chain.from_iterable(chunk.nodes_of(types) for chunk in self.chunks))
            parts = [chunk.nodes_of(types) for chunk in self.chunks]
            found = self._by_type[types] = tuple(chain.from_iterable(parts))
            self._offsets[types] = _offsets(parts, 0)
        return found

    def carry_type_indexes(self, previous: "ParsedModule", first: int, old_count: int, new_count: int) -> None:
        """Take over ``previous``'s type indexes, re-reading only chunks ``first .. first + new_count``
        (which replaced ``old_count`` chunks there); hand on what ``previous`` carried."""
        self.carried = previous.carried
        for types, nodes in previous._by_type.items():
            offsets = previous._offsets[types]
            start, stop = offsets[first], offsets[first + old_count]
            parts = [chunk.nodes_of(types) for chunk in self.chunks[first : first + new_count]]
            middle = tuple(chain.from_iterable(parts))
            grown = len(middle) - (stop - start)
            self._by_type[types] = nodes[:start] + middle + nodes[stop:]
            self._offsets[types] = (
                offsets[: first + 1] + _offsets(parts, start)[1:] + [o + grown for o in offsets[first + old_count + 1 :]]
            )


def _offsets(parts: list[list[ast.AST]], start: int) -> list[int]:
    """Where each part starts when they are laid end to end from ``start``, and where the last ends."""
    offsets = [start]
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    return offsets


def shift_node(node: ast.AST, delta: int) -> None:
    """Move one node ``delta`` lines down (its own position only)."""
    if "lineno" in node._attributes:
        node.lineno += delta  # type: ignore[attr-defined]
        if node.end_lineno is not None:  # type: ignore[attr-defined]
            node.end_lineno += delta  # type: ignore[attr-defined]


def statement_start(statement: ast.stmt) -> int:
    """The statement's first line (1-based), its decorators included."""
    decorators = getattr(statement, "decorator_list", ())
    return min([statement.lineno, *(d.lineno for d in decorators)])


def group_statements(statements: list[ast.stmt]) -> list[list[ast.stmt]]:
    """Statements grouped so that no two groups share a line (``a = 1; b = 2``)."""
    groups: list[list[ast.stmt]] = []
    last_end = 0
    for statement in statements:
        if groups and statement_start(statement) <= last_end:
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
    for group in group_statements(tree.body):
        for statement in group:
            parents[statement] = tree
        nodes.extend(flatten(forest_levels(group, parents)))
    return tuple(nodes), parents


def chunk_statements(lines: list[str], first: int, statements: list[ast.stmt], parents: dict[ast.AST, ast.AST]) -> list[Chunk]:
    """Split lines ``first..`` that parsed to ``statements`` into chunks, one per group of
    statements that share lines, recording the parents of their nodes."""
    groups = group_statements(statements)
    if not groups:
        return [Chunk(first, lines, [], [])]
    chunks: list[Chunk] = []
    # A group's chunk starts at its first line (the first chunk also takes any lines before it).
    starts = [first] + [statement_start(group[0]) - 1 for group in groups[1:]]
    ends = starts[1:] + [first + len(lines)]
    for group, start, end in zip(groups, starts, ends):
        nodes = flatten(forest_levels(group, parents))
        chunks.append(Chunk(start, lines[start - first : end - first], group, nodes))
    return chunks


def assemble(
    source: str, lines: list[str], chunks: list[Chunk], top_level_await: bool, reparsed: int, parents: dict[ast.AST, ast.AST]
) -> ParsedModule:
    """A version from its chunks; ``parents`` already holds every node below the statements."""
    tree = ast.Module(body=[s for chunk in chunks for s in chunk.statements], type_ignores=[])
    nodes: list[ast.AST] = [tree]
    for chunk in chunks:
        for statement in chunk.statements:
            parents[statement] = tree
        nodes.extend(chunk.nodes)
    return ParsedModule(source, lines, chunks, top_level_await, tree, tuple(nodes), parents, reparsed)


def shift_chunks(chunks: Iterable[Chunk], delta: int) -> None:
    """Move chunks (and every line number in them) down by ``delta`` lines."""
    for chunk in chunks:
        chunk.first += delta
        for node in chunk.nodes:
            shift_node(node, delta)
