"""Notebook cells <-> one module, until ``analysis.notebooks`` lands.

Code cells are joined in order into one module (each cell on its own lines, so
line numbers map back by offset); IPython magics and shell escapes are
neutralised line for line, keeping the line count.  Findings are then split
back onto their cells, in each cell's own coordinates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ..analysis.text import split_lines
from ..findings import Edit, Finding, Fix, Span

_MAGIC = re.compile(r"^(\s*)([%!?]|\w[\w.]*\?\??\s*$)")


def _neutralise(lines: list[str]) -> list[str]:
    if lines and lines[0].lstrip().startswith("%%"):
        return ["# " + line for line in lines]  # a cell magic: the cell is not Python
    result = []
    for line in lines:
        match = _MAGIC.match(line)
        result.append(f"{match.group(1)}pass  # magic" if match else line)
    return result


@dataclass
class JoinedCells:
    """Cells joined into one source; ``starts[i]`` is the 1-based first line of cell i."""

    source: str
    starts: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)

    def to_cell(self, line: int) -> tuple[int, int]:
        """Module line -> (cell index, 1-based line in that cell)."""
        for index in range(len(self.starts) - 1, -1, -1):
            if line >= self.starts[index]:
                return index, line - self.starts[index] + 1
        return 0, line

    def from_cell(self, cell: int, line: int) -> int:
        return self.starts[cell] + line - 1

    def _local_span(self, span: Span, cell: int) -> Span | None:
        first = self.starts[cell]
        last = first + max(self.lengths[cell], 1) - 1
        if not first <= span.line <= last:
            return None
        if span.end_line > last + 1 or (span.end_line == last + 1 and span.end_column > 1):
            return Span(span.line - first + 1, span.column, last - first + 1, 10**6)
        return Span(span.line - first + 1, span.column, span.end_line - first + 1, span.end_column)

    def split(self, findings: list[Finding]) -> dict[int, list[Finding]]:
        """Module findings -> {cell index: findings in cell coordinates}."""
        result: dict[int, list[Finding]] = {index: [] for index in range(len(self.starts))}
        for finding in findings:
            cell, _ = self.to_cell(finding.span.line)
            span = self._local_span(finding.span, cell)
            if span is None:
                continue
            result[cell].append(replace(finding, span=span, fix=self._local_fix(finding.fix, cell)))
        return result

    def _local_fix(self, fix: Fix | None, cell: int) -> Fix | None:
        if fix is None:
            return None
        edits = []
        for edit in fix.edits:
            span = self._local_span(edit.span, cell)
            if span is None or span.end_column == 10**6:
                return None  # a fix reaching into another cell is not offered
            edits.append(Edit(span, edit.content))
        return replace(fix, edits=tuple(edits))


def join_cells(texts: list[str]) -> JoinedCells:
    """Join code cells' texts into one module."""
    parts: list[str] = []
    starts: list[int] = []
    lengths: list[int] = []
    line = 1
    for text in texts:
        lines = _neutralise(split_lines(text))
        starts.append(line)
        lengths.append(len(lines))
        parts.extend(lines)
        parts.append("")  # a blank separator line keeps cells apart
        line += len(lines) + 1
    return JoinedCells("\n".join(parts) + "\n", starts, lengths)
