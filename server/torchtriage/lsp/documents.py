"""State per open document: generation, last findings, profile annotations.

A *document* is what gets analysed as one module: a text document, or a
notebook (all its code cells joined).  A *target* is what diagnostics are
published on: the text document itself, or one cell.  Findings and profile
annotations are kept per target in the target's own line numbers, and move
with edits above them (:class:`LineMap`); items on edited lines are dropped.
"""

from __future__ import annotations

import asyncio
import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from lsprotocol import types

from ..analysis.engine import IncrementalAnalyzer
from ..analysis.notebooks import NotebookAnalyzer
from ..analysis.project_view import ProjectView
from ..analysis.text import split_lines
from ..findings import Finding, Span

T = TypeVar("T")


@dataclass(frozen=True)
class Annotation:
    """One profiled line: the inlay label and the diagnostic message it shows."""

    line: int  # 1-based, in the target's coordinates
    label: str  # e.g. "▮▮▮ 38% · 12.1 ms/step · data wait"
    message: str  # e.g. "profile confirms TT101: 38% of step time (host sync)"
    share: float
    kind: str = "hotspot"  # "hotspot" | "verdict" | "finding" (a runtime finding, TTR...)
    codes: tuple[str, ...] = ()
    ms_per_step: float = 0.0
    category: str = ""
    delta_ms: float | None = None  # change in ms per step since the previous profile (None: no comparison)


@dataclass
class ProfileSummary:
    """What the last profile run of a document left behind (for code lenses)."""

    report_path: str
    html_path: str | None
    bottleneck: str
    share: float
    step_time_ms: float

    @property
    def lens_title(self) -> str:
        return (
            f"Last profile: {self.share:.0%} {self.bottleneck.replace('_', ' ')} · "
            f"{self.step_time_ms:.0f} ms/step — show report"
        )


@dataclass
class TargetState:
    """What is published on one URI."""

    uri: str
    version: int | None = None
    text: str = ""  # as of the last change seen (for full-text changes)
    findings: list[Finding] = field(default_factory=list)
    last_good: list[Finding] = field(default_factory=list)  # from the last text that parsed
    annotations: list[Annotation] = field(default_factory=list)
    step_loops: list[int] = field(default_factory=list)  # header lines, 1-based


@dataclass
class DocumentState:
    """One analysed unit (text document or notebook) and its targets."""

    uri: str
    path: Path | None
    notebook: bool = False
    generation: int = 0  # bumped on every change; results of older ones are dropped
    analysed: int = -1  # the generation whose results are published
    targets: dict[str, TargetState] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None
    profile: ProfileSummary | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)  # set when analysed == generation
    refresh_pending: bool = False  # the next analysis was not asked for by an edit: tell pulling clients
    # Re-parses only what each edit touched; used by one analysis at a time (see DiagnosticsEngine._run).
    analyzer: IncrementalAnalyzer | NotebookAnalyzer | None = field(default=None, repr=False)
    # What the rest of the project contributes (see workspace_index); None before the first build.
    project_view: ProjectView | None = field(default=None, repr=False)

    def target(self, uri: str) -> TargetState:
        return self.targets.setdefault(uri, TargetState(uri))

    def touch(self) -> int:
        self.generation += 1
        self.done.clear()
        return self.generation


class LineMap:
    """Where each 1-based line of the old text is after one change (None: edited)."""

    def __init__(self, mapping: Callable[[int], int | None]) -> None:
        self._mapping = mapping

    def __call__(self, line: int) -> int | None:
        return self._mapping(line)

    @classmethod
    def for_change(cls, change: types.TextDocumentContentChangeEvent, old_text: str) -> "LineMap":
        if not isinstance(change, types.TextDocumentContentChangePartial):
            return cls.for_texts(old_text, change.text)
        start, end = change.range.start, change.range.end
        s, e = start.line + 1, end.line + 1
        delta = change.text.count("\n") - (e - s)
        whole_lines = start.character == 0 and end.character == 0 and (not change.text or change.text.endswith("\n"))
        last_edited = e - 1 if whole_lines else e

        def mapping(line: int) -> int | None:
            if line < s:
                return line
            if line > last_edited:
                return line + delta
            return None

        return cls(mapping)

    @classmethod
    def for_texts(cls, old: str, new: str) -> "LineMap":
        """A full-text change: lines kept by a line diff keep their annotations."""
        matcher = difflib.SequenceMatcher(None, split_lines(old), split_lines(new), autojunk=False)
        moved: dict[int, int] = {}
        for block in matcher.get_matching_blocks():
            for offset in range(block.size):
                moved[block.a + offset + 1] = block.b + offset + 1
        return cls(moved.get)


def shift_findings(findings: Iterable[Finding], line_map: LineMap) -> list[Finding]:
    """Findings moved with the text; fixes dropped (they are stale until re-analysis)."""
    result = []
    for finding in findings:
        line, end_line = line_map(finding.span.line), line_map(finding.span.end_line)
        if line is None or end_line is None:
            continue
        span = Span(line, finding.span.column, end_line, finding.span.end_column)
        result.append(replace(finding, span=span, fix=None))
    return result


def shift_annotations(annotations: Iterable[Annotation], line_map: LineMap) -> list[Annotation]:
    result = []
    for annotation in annotations:
        line = line_map(annotation.line)
        if line is not None:
            result.append(replace(annotation, line=line))
    return result


def apply_line_map(target: TargetState, line_map: LineMap) -> None:
    """Move everything published on a target along with one edit."""
    target.findings = shift_findings(target.findings, line_map)
    target.last_good = shift_findings(target.last_good, line_map)
    target.annotations = shift_annotations(target.annotations, line_map)
    target.step_loops = [line for line in map(line_map, target.step_loops) if line is not None]


class DocumentStore:
    """All analysed documents, by document URI, with cell URI lookup."""

    def __init__(self) -> None:
        self._documents: dict[str, DocumentState] = {}
        self._owner: dict[str, str] = {}  # target uri -> document uri

    def open(self, uri: str, path: Path | None, notebook: bool = False) -> DocumentState:
        state = self._documents.get(uri) or DocumentState(uri, path, notebook)
        self._documents[uri] = state
        self._owner[uri] = uri
        return state

    def bind(self, target_uri: str, document_uri: str) -> None:
        self._owner[target_uri] = document_uri

    def close(self, uri: str) -> DocumentState | None:
        state = self._documents.pop(uri, None)
        if state is not None:
            if state.timer is not None:
                state.timer.cancel()
            for target in list(state.targets):
                self._owner.pop(target, None)
        self._owner.pop(uri, None)
        return state

    def get(self, uri: str) -> DocumentState | None:
        """The document that owns a document or cell URI."""
        owner = self._owner.get(uri)
        return self._documents.get(owner) if owner else None

    def all(self) -> list[DocumentState]:
        return list(self._documents.values())
