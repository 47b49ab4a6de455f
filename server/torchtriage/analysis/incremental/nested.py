"""Re-parse only the statements an edit changed inside a long function (or any block).

An edit inside a 740-line ``main()`` need not re-parse ``main()``: the statements
around the changed lines, taken from the innermost statement list (a function
body, a loop body, an ``else`` or ``except`` block ...) that holds them, are
parsed on their own and put in place of the old ones.  The function node, every
statement the edit did not touch and everything under them stay the same
objects, so results cached on them (:mod:`.memo`, the walk order of
:mod:`.levels`) are reused; only the ancestors of the edited statements are
brought up to date (their end positions, walk order and caches).

Why this is exact: the re-parsed *region* is whole lines, from the first line of
a statement that starts its line (nothing before it but its indentation, and no
backslash continuation on the line above) to the line before the next untouched
statement of the same list, or to the end of the list's last statement.  At its
first line the tokenizer is at the start of a logical line in both the file and
the region alone.  The region is parsed as the body of a dummy ``if 1:`` placed
on the line above it, so positions come out as in the file; its first line of
code must be indented exactly as the statements it replaces, and the result
must be that one ``if`` with no ``else``, so a line that leaves the block (a
dedent) fails instead of parsing differently.  An unclosed bracket, string,
decorator or block at the end of the region fails too.  Any failure falls back
to re-parsing the top-level chunk (:mod:`.incremental`), which gives the true
syntax error when there is one.  The parser's context-dependent checks
(``return`` outside a function, ``await`` outside ``async``) are not parser
errors with ``PyCF_ONLY_AST``, so a region parses alone exactly when it parses
in place.  ``tests/analysis/incremental/test_nested.py`` compares the result
with a full parse after thousands of random edits.
"""

from __future__ import annotations

import ast

from .chunks import ParsedModule, assemble, group_statements, shift_chunks, shift_node, statement_start
from .levels import CONTAINERS, flatten, levels_of, relevel, subtree_nodes
from .memo import forget
from ..parsing import PARSE_ERRORS, compile_tree

__all__ = ["reparse_inside"]

_LIST_FIELDS = ("body", "orelse", "finalbody")


def _statement_lists(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists directly in ``node`` (a function body, an ``else`` block ...)."""
    lists = []
    for name in _LIST_FIELDS:
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            lists.append(value)
    return lists


def _clause_containers(node: ast.AST) -> list[ast.AST]:
    """``except`` handlers and ``match`` cases: containers of statement lists below ``node``."""
    return [*getattr(node, "handlers", ()), *getattr(node, "cases", ())]


def _clause_lines(clause: ast.AST) -> tuple[int, int]:
    """First and last line (1-based) of an ``except`` handler or a ``match`` case."""
    if isinstance(clause, ast.match_case):
        return clause.pattern.lineno, clause.body[-1].end_lineno or 0
    return clause.lineno, clause.end_lineno or 0  # type: ignore[attr-defined]


class _Edit:
    """The changed old lines ``[first, stop)`` (0-based; equal for an insertion) and the new text."""

    def __init__(self, previous: ParsedModule, lines: list[str], first: int, stop: int) -> None:
        self.previous = previous
        self.old = previous.lines
        self.lines = lines
        self.first = first
        self.stop = stop
        self.delta = len(lines) - len(previous.lines)


def _run(statements: list[ast.stmt], edit: _Edit) -> tuple[int, int, int, int] | None:
    """The statements of one list around the changed lines: (first index, end index, first
    line, last line of the region, 0-based and inclusive), or None when the list does not
    hold the whole edit."""
    groups = group_statements(statements)
    starts = [statement_start(group[0]) - 1 for group in groups]
    ends = [starts[i + 1] - 1 for i in range(len(groups) - 1)] + [max(s.end_lineno or s.lineno for s in groups[-1]) - 1]
    low, high = edit.first - 1, edit.stop  # one line of context each side
    chosen = [i for i in range(len(groups)) if starts[i] <= high and ends[i] >= low]
    if not chosen:
        return None
    g0, g1 = chosen[0], chosen[-1]
    if not (starts[g0] <= edit.first and edit.stop <= ends[g1] + 1):
        return None
    first_index = sum(len(group) for group in groups[:g0])
    end_index = first_index + sum(len(group) for group in groups[g0 : g1 + 1])
    return first_index, end_index, starts[g0], ends[g1]


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]


def _starts_its_line(statement: ast.stmt, line: str) -> bool:
    """Nothing but indentation before the statement (or its first decorator) on its first line."""
    indent = _indentation(line)
    decorators = getattr(statement, "decorator_list", ())
    if decorators and statement_start(statement) < statement.lineno:
        return line[len(indent) : len(indent) + 1] == "@"
    return len(indent.encode("utf-8")) == statement.col_offset


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _parse_region(edit: _Edit, run_statements: list[ast.stmt], first_line: int, last_line: int, path: str):  # type: ignore[no-untyped-def]
    """The new statements of the region (old lines ``first_line..last_line``), or None when
    it cannot be parsed on its own exactly as in place."""
    old = edit.old
    if first_line < 1 or not _starts_its_line(run_statements[0], old[first_line]):
        return None
    if old[first_line - 1].rstrip("\r\n").endswith("\\"):
        return None  # the line above continues into the region
    indent = _indentation(old[first_line])
    stop = last_line + 1 + edit.delta
    region = edit.lines[first_line:stop]
    code = next((line for line in region if _is_code(line)), None)
    if code is None or _indentation(code) != indent or not indent:
        return None
    source = "\n" * (first_line - 1) + "if 1:\n" + "".join(region)
    try:
        tree = compile_tree(source, path, edit.previous.top_level_await)
    except PARSE_ERRORS:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.If) or tree.body[0].orelse:
        return None
    return tree.body[0].body, stop - first_line


def _block_end(node: ast.AST) -> tuple[int, int] | None:
    """Where a container ends: at the end of its syntactically last statement or clause."""
    for name in ("finalbody", "orelse", "handlers", "cases", "body"):
        value = getattr(node, name, None)
        if value:
            last = value[-1]
            if isinstance(last, ast.match_case):  # (cases have no position of their own)
                last = last.body[-1]
            return last.end_lineno, last.end_col_offset
    return None


def _find(node: ast.AST, edit: _Edit, path: str, trail: list[ast.AST]):  # type: ignore[no-untyped-def]
    """Deepest first: (container, its list, run, new statements, re-parsed lines), or None."""
    for clause in _clause_containers(node):
        first, last = _clause_lines(clause)
        if first - 1 <= edit.first and edit.stop <= last:
            found = _find(clause, edit, path, [*trail, clause])
            if found is not None:
                return found
    for statements in _statement_lists(node):
        run = _run(statements, edit)
        if run is None:
            continue
        first_index, end_index, first_line, last_line = run
        if end_index - first_index == 1 and isinstance(statements[first_index], CONTAINERS):
            inner = statements[first_index]
            if statement_start(inner) - 1 < edit.first:  # the edit is below its first line
                found = _find(inner, edit, path, [*trail, inner])
                if found is not None:
                    return found
        parsed = _parse_region(edit, statements[first_index:end_index], first_line, last_line, path)
        if parsed is None:
            return None
        return trail, statements, first_index, end_index, first_line, last_line, parsed
    return None


def reparse_inside(
    previous: ParsedModule, chunk_index: int, source: str, lines: list[str], first: int, stop: int, path: str
) -> ParsedModule | None:
    """The new version when the changed old lines ``[first, stop)`` lie inside one top-level
    statement's blocks and the statements around them parse on their own; else None (and
    ``previous`` untouched)."""
    chunk = previous.chunks[chunk_index]
    if len(chunk.statements) != 1 or not _statement_lists(chunk.statements[0]):
        return None
    top = chunk.statements[0]
    edit = _Edit(previous, lines, first, stop)
    if not statement_start(top) - 1 < first:
        return None
    found = _find(top, edit, path, [top])
    if found is None:
        return None
    trail, statements, first_index, end_index, first_line, last_line, (new_statements, reparsed) = found
    container = trail[-1]
    parents = previous.parents
    old_statements = statements[first_index:end_index]
    removed = {id(node) for statement in old_statements for node in subtree_nodes(statement)}
    for statement in old_statements:
        for node in subtree_nodes(statement):
            parents.pop(node, None)
    delta = edit.delta
    if delta:
        after_line = last_line + 1  # 1-based last line of the old region
        for node in chunk.nodes:
            if id(node) not in removed and getattr(node, "lineno", 0) > after_line:
                shift_node(node, delta)
    statements[first_index:end_index] = new_statements
    for statement in new_statements:
        parents[statement] = container
        levels_of(statement, parents)
    for ancestor in reversed(trail):
        end = _block_end(ancestor) if "end_lineno" in ancestor._attributes else None
        if end is not None:
            ancestor.end_lineno, ancestor.end_col_offset = end  # type: ignore[attr-defined]
        forget(ancestor)
        relevel(ancestor)
    chunk.lines = lines[chunk.first : chunk.end + delta]
    chunk.nodes = flatten(levels_of(top, parents))
    chunk.renewed()
    chunks = previous.chunks
    if delta:
        shift_chunks(chunks[chunk_index + 1 :], delta)
    module = assemble(source, lines, chunks, previous.top_level_await, reparsed, parents)
    module.carry_type_indexes(previous, chunk_index, 1, 1)
    return module
