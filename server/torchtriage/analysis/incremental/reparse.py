"""Parse a module in chunks, and re-parse only what an edit touched.

A *chunk* is a run of whole lines holding one or more top-level statements
(plus the comments and blank lines after them) that parses on its own.  The
module's ast, its nodes in walk order and their parents are assembled from
the chunks (:mod:`.chunks`).  After an edit, :func:`reparse` first tries the
statements around the changed lines inside one function or block (:mod:`.nested`:
an edit in a 740-line ``main()`` parses a few lines, and every other node of
``main()`` stays as it was); else it re-parses the top-level chunks the edit
touched; the chunks after them are reused, their line numbers shifted when the
edit added or removed lines.

Why this is exact: a top-level statement always starts at column 0 with no
open bracket, string or line continuation behind it, so the tokenizer is in
the same state at a chunk's first line whether it reads the chunk alone or
after the chunks before it (:mod:`.nested` says why the same holds inside a
block).  When the re-parsed region does not parse on its own (an unclosed
bracket that the next chunk might close, a decorator without its ``def`` ...)
the whole module is parsed instead, which also gives the true syntax error.
``tests/analysis/incremental/test_reparse.py`` and ``test_nested.py`` check
the result against a full parse over thousands of random edits.

The chunks of the previous version are reused *in place*: a version handed to
:func:`reparse` must not be used afterwards (the language server keeps one
per document and analyses a document's versions one at a time).
"""

from __future__ import annotations

import ast

from ...findings import Finding
from .chunks import Chunk, ParsedModule, assemble, chunk_statements, shift_chunks, walk_module
from .nested import reparse_inside
from ..parsing import PARSE_ERRORS, compile_tree, parse_source
from ..text import split_lines

__all__ = ["Chunk", "ParsedModule", "parse_module", "reparse", "walk_module"]


def parse_module(source: str, path: str = "<string>", top_level_await: bool = False) -> ParsedModule | Finding:
    """Parse the whole module into chunks, or a TT000 finding for a syntax error."""
    tree = parse_source(source, path, top_level_await)
    if isinstance(tree, Finding):
        return tree
    lines = split_lines(source, keepends=True)
    parents: dict[ast.AST, ast.AST] = {}
    return assemble(source, lines, chunk_statements(lines, 0, tree.body, parents), top_level_await, len(lines), parents)


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


def reparse(previous: ParsedModule, source: str, path: str = "<string>") -> ParsedModule | Finding:
    """The new version of ``previous`` after an edit, re-parsing only what the edit touched:
    the statements it changed inside one long function or block where they parse on their
    own (:mod:`.nested`), else the top-level chunks it touched.

    ``previous`` is consumed (its unchanged chunks and nodes move into the result); on a
    syntax error it is left as it was.
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
    if first_index == last_index:
        inside = reparse_inside(previous, first_index, source, lines, prefix, len(old) - suffix, path)
        if inside is not None:
            return inside
    start, stop = chunks[first_index].first, chunks[last_index].end + delta
    region = "".join(lines[start:stop])
    try:
        tree = compile_tree("\n" * start + region, path, previous.top_level_await)
    except PARSE_ERRORS:
        return parse_module(source, path, previous.top_level_await)  # the true error, or a multi-chunk construct
    parents = previous.parents
    for chunk in chunks[first_index : last_index + 1]:
        for node in chunk.nodes:
            parents.pop(node, None)
    after = chunks[last_index + 1 :]
    if delta:
        shift_chunks(after, delta)
    middle = chunk_statements(lines[start:stop], start, tree.body, parents)
    module = assemble(source, lines, chunks[:first_index] + middle + after, previous.top_level_await, stop - start, parents)
    module.carry_type_indexes(previous, first_index, last_index + 1 - first_index, len(middle))
    return module
