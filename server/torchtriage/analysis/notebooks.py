"""Notebooks: code cells <-> one virtual module, findings and fixes mapped back.

The code cells, in order and with IPython syntax neutralised line for line
(:mod:`.ipython_magics`), are joined into one module so that a training loop
in cell 5 sees the model defined in cell 2.  Findings come back with
cell-local spans plus a :class:`CellLocation`; fixes are cell-local edits too,
so a host can apply them to the cell's text directly.

A cell that does not parse gets its own TT000 finding and is left out of the
virtual module (as blank lines), so one broken cell does not hide the others.

:class:`NotebookAnalyzer` keeps one notebook's virtual module between versions
(an :class:`~torchtriage.analysis.engine.IncrementalAnalyzer` over it), so an
edit inside one cell re-parses only the top-level statements it touched; the
language server keeps one per open notebook.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..config import Settings
from ..findings import SYNTAX_ERROR_CODE, CellLocation, Edit, Finding, Fix, Span
from .autofix import MAX_ROUNDS
from .engine import IncrementalAnalyzer, has_file_noqa
from .parsing import parse_source
from .fixes import apply_edits, select_fixes
from .incremental.reparse import ParsedModule
from .ipython_magics import neutralise_cell
from .text import split_lines


@dataclass(frozen=True)
class VirtualModule:
    """Neutralised code cells joined into one module, with the line map between them."""

    source: str
    cells: tuple[str, ...]  # the cells as given (IPython syntax intact)
    starts: tuple[int, ...]  # 1-based virtual line of each cell's first line
    line_counts: tuple[int, ...]
    neutralised: frozenset[int]  # virtual lines whose IPython syntax was replaced

    def to_cell(self, line: int) -> tuple[int, int]:
        """(0-based cell index, 1-based cell line) of a virtual line.

        Lines past the end map onto the last non-empty cell (an EOF error).
        """
        filled = [i for i, count in enumerate(self.line_counts) if count]
        if not filled:
            return (0, 1)
        position = bisect.bisect_right([self.starts[i] for i in filled], line) - 1
        cell = filled[max(position, 0)]
        return cell, max(line - self.starts[cell] + 1, 1)

    def from_cell(self, cell: int, line: int) -> int:
        """The virtual line of a 1-based line in a 0-based cell."""
        return self.starts[cell] + line - 1

    def span_to_cell(self, span: Span) -> tuple[int, Span]:
        """A virtual span as (cell, cell-local span); a span leaving its cell is cut at the cell's end."""
        cell, line = self.to_cell(span.line)
        end_line = span.end_line - self.starts[cell] + 1
        end_column = span.end_column
        if end_line > self.line_counts[cell] and not (end_line == self.line_counts[cell] + 1 and end_column == 1):
            last = split_lines(self.cells[cell])[-1] if self.cells[cell] else ""
            end_line, end_column = self.line_counts[cell], len(last) + 1
        return cell, Span(line, span.column, max(end_line, line), end_column)

    def edit_to_cell(self, edit: Edit) -> tuple[int, Edit] | None:
        """A virtual edit as a cell-local one; None if it leaves its cell or touches IPython syntax."""
        span = edit.span
        cell, line = self.to_cell(span.line)
        end_line = span.end_line - self.starts[cell] + 1
        whole_lines = span.end_column == 1 and span.end_line > span.line
        if end_line > self.line_counts[cell] + (1 if whole_lines else 0):
            return None
        touched_end = span.end_line - 1 if whole_lines else span.end_line
        if span.line == span.end_line and span.column == span.end_column == 1:
            touched_end = span.line - 1  # an insertion at a line start touches nothing
        if any(v in self.neutralised for v in range(span.line, touched_end + 1)):
            return None
        return cell, Edit(Span(line, span.column, end_line, span.end_column), edit.content)


def _line_count(text: str) -> int:
    return len(split_lines(text))


def build_virtual_module(cells: Sequence[str]) -> VirtualModule:
    """Join cell sources (code cells only, in order) into one analysable module."""
    parts: list[str] = []
    starts: list[int] = []
    counts: list[int] = []
    neutralised: set[int] = set()
    line = 1
    for cell in cells:
        result = neutralise_cell(cell)
        text = result.text
        if text and not text.endswith(("\n", "\r")):
            text += "\n"
        starts.append(line)
        counts.append(_line_count(text))
        neutralised.update(line + local - 1 for local in result.changed_lines)
        parts.append(text)
        line += counts[-1]
    return VirtualModule("".join(parts), tuple(cells), tuple(starts), tuple(counts), frozenset(neutralised))


# --- the .ipynb file ---------------------------------------------------------------


@dataclass
class Notebook:
    """A parsed .ipynb: its JSON, which cells are code, and how the file was written."""

    data: dict[str, Any]
    code_cells: list[int]  # notebook indexes of the code cells
    indent: int | str | None
    separators: tuple[str, str]
    ensure_ascii: bool
    newline: str
    trailing_newline: bool

    @property
    def is_python(self) -> bool:
        metadata = self.data.get("metadata") or {}
        language = (metadata.get("language_info") or {}).get("name") or (
            metadata.get("kernelspec") or {}
        ).get("language")
        return not isinstance(language, str) or language.lower() in ("python", "python3", "ipython")

    def sources(self) -> list[str]:
        return [cell_source(self.data["cells"][index]) for index in self.code_cells]


def cell_source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise ValueError("not a valid notebook: a cell's 'source' is neither text nor a list of lines")


def read_notebook(text: str) -> Notebook:
    """Parse .ipynb text; ValueError with a readable message when it is not a notebook."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"not a valid notebook: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise ValueError("not a valid notebook: JSON nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise ValueError("not supported: nbformat 3 notebook (re-save it with Jupyter to upgrade)")
        raise ValueError("not a Jupyter notebook: no top-level 'cells' list")
    code = [
        index
        for index, cell in enumerate(data["cells"])
        if isinstance(cell, dict) and cell.get("cell_type") == "code"
    ]
    indent, separators, newline = _layout(text)
    return Notebook(data, code, indent, separators, text.isascii(), newline, text.endswith("\n"))


def _layout(text: str) -> tuple[int | str | None, tuple[str, str], str]:
    """json.dumps arguments that reproduce the file's indentation, separators and newlines."""
    layout = re.match(r"\{(\r?\n)([ \t]*)\S", text)
    if layout is None:  # written on one line
        return None, ((", ", ": ") if '": ' in text else (",", ":")), "\n"
    indent = layout.group(2)
    return (len(indent) if not indent.strip(" ") else indent), (",", ": "), layout.group(1)


def write_notebook(notebook: Notebook, new_sources: dict[int, str]) -> str:
    """The notebook's JSON with some code cells' sources replaced, written in the file's style."""
    for index, source in new_sources.items():
        cell = notebook.data["cells"][index]
        cell["source"] = split_lines(source, keepends=True) if isinstance(cell.get("source"), list) else source
    text = json.dumps(
        notebook.data, indent=notebook.indent, separators=notebook.separators, ensure_ascii=notebook.ensure_ascii
    )
    if notebook.newline != "\n":
        text = text.replace("\n", notebook.newline)
    return text + (notebook.newline if notebook.trailing_newline else "")


# --- analysis -------------------------------------------------------------------------


def _cell_syntax_errors(cells: Sequence[str], path: str) -> dict[int, Finding]:
    """TT000 per cell that does not parse on its own (cell-local spans)."""
    errors: dict[int, Finding] = {}
    for position, cell in enumerate(cells):
        tree = parse_source(neutralise_cell(cell).text, path, top_level_await=True)
        if isinstance(tree, Finding):
            errors[position] = tree
    return errors


def analyze_cells(
    cells: Sequence[str], path: str, settings: Settings | None = None, numbers: Sequence[int] | None = None
) -> list[Finding]:
    """Findings for code cells, with cell-local spans; ``numbers`` are the cells' notebook indexes."""
    return NotebookAnalyzer(path).analyze(cells, settings, numbers)


class NotebookAnalyzer:
    """Analyses successive versions of one notebook's code cells, re-parsing only the
    top-level statements each edit touched: one :class:`IncrementalAnalyzer` over the
    virtual module the cells are joined into.

    Gives exactly what :func:`analyze_cells` gives for the same cells.  Not thread-safe:
    one notebook's versions must be analysed one at a time.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._module = IncrementalAnalyzer(path, top_level_await=True)
        self._last: ParsedModule | None = None
        # Lines of the virtual module the last analysis parsed (0: none changed; None: it did not parse).
        self.reparsed_lines: int | None = None

    def analyze(
        self, cells: Sequence[str], settings: Settings | None = None, numbers: Sequence[int] | None = None
    ) -> list[Finding]:
        """Findings for this version of the cells, with cell-local spans, sorted by cell and position."""
        numbers = list(numbers) if numbers is not None else list(range(len(cells)))
        module = build_virtual_module(cells)
        if has_file_noqa(module.source):
            return []
        results: list[Finding] = []
        if isinstance(self._parse(module.source), Finding):
            errors = _cell_syntax_errors(cells, self.path)
            for position, error in errors.items():
                where = CellLocation(numbers[position], error.span.line, error.span.end_line)
                results.append(error.with_changes(cell=where))
            blanked = ["\n" * module.line_counts[i] if i in errors else cell for i, cell in enumerate(cells)]
            module = build_virtual_module(blanked)
            self._parse(module.source)
        for finding in self._module.analyze(module.source, settings):  # (parsed above: reused)
            position, span = module.span_to_cell(finding.span)
            results.append(
                finding.with_changes(
                    span=span,
                    cell=CellLocation(numbers[position], span.line, span.end_line),
                    fix=_fix_to_cell(module, finding.fix, position),
                )
            )
        return sorted(results, key=lambda f: (f.cell.cell if f.cell else 0, f.span.line, f.span.column, f.code))

    def _parse(self, source: str) -> ParsedModule | Finding:
        parsed = self._module.parse(source)
        if isinstance(parsed, Finding):
            self.reparsed_lines = None
        else:
            self.reparsed_lines = 0 if parsed is self._last else parsed.reparsed_lines
            self._last = parsed
        return parsed


def _fix_to_cell(module: VirtualModule, fix: Fix | None, position: int) -> Fix | None:
    if fix is None:
        return None
    edits = []
    for edit in fix.edits:
        mapped = module.edit_to_cell(edit)
        if mapped is None or mapped[0] != position:
            return None  # touches IPython syntax or another cell: not offered
        edits.append(mapped[1])
    return Fix(fix.title, fix.applicability, tuple(edits))


def analyze_notebook(text: str, path: str, settings: Settings | None = None) -> list[Finding]:
    """Findings for an .ipynb file's text; ValueError when it is not a notebook."""
    notebook = read_notebook(text)
    if not notebook.is_python:
        return []
    return analyze_cells(notebook.sources(), path, settings, notebook.code_cells)


def fix_notebook(
    text: str, path: str, settings: Settings | None = None, unsafe: bool = False
) -> tuple[str, int, list[Finding]]:
    """Apply fixes cell by cell; returns (new .ipynb text, fixes applied, remaining findings)."""
    notebook = read_notebook(text)
    if not notebook.is_python:
        return text, 0, []
    position_of = {number: position for position, number in enumerate(notebook.code_cells)}
    sources = notebook.sources()
    findings = analyze_cells(sources, path, settings, notebook.code_cells)
    applied = 0
    for _ in range(MAX_ROUNDS):
        by_cell: dict[int, list[Finding]] = {}
        for finding in findings:
            if finding.cell is not None and finding.fix is not None:
                by_cell.setdefault(position_of[finding.cell.cell], []).append(finding)
        candidate = list(sources)
        count = 0
        for position, cell_findings in by_cell.items():
            fixes = select_fixes(cell_findings, unsafe)
            candidate[position] = apply_edits(sources[position], [e for fix in fixes for e in fix.edits])
            count += len(fixes)
        if candidate == sources:
            break
        new_findings = analyze_cells(candidate, path, settings, notebook.code_cells)
        if _syntax_errors(new_findings) > _syntax_errors(findings):
            break  # never break a cell that parsed
        sources, findings = candidate, new_findings
        applied += count
    if not applied:
        return text, 0, findings
    original = notebook.sources()
    changed = {
        notebook.code_cells[p]: source for p, source in enumerate(sources) if source != original[p]
    }
    return write_notebook(notebook, changed), applied, findings


def _syntax_errors(findings: Sequence[Finding]) -> int:
    return sum(1 for finding in findings if finding.code == SYNTAX_ERROR_CODE)
