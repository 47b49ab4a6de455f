"""The one currency of the core: findings, their spans, severities and fixes.

Everything the analyzer, the CLI, the language server and the runtime bridge
exchange is expressed with these types.  Their JSON form (``to_json``) is a
public contract documented in the README: add fields, never rename or remove.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any


class Severity(str, enum.Enum):
    """How loud a finding is; maps onto LSP DiagnosticSeverity and SARIF level."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, enum.Enum):
    """Whether a fix keeps behaviour (safe) or may change it (unsafe)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Span:
    """A source range: 1-based lines, 1-based character columns, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    def to_json(self) -> dict[str, int]:
        return {
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }


@dataclass(frozen=True)
class Edit:
    """Replace the text in ``span`` with ``content`` (insertion when the span is empty)."""

    span: Span
    content: str

    def to_json(self) -> dict[str, Any]:
        return {**self.span.to_json(), "content": self.content}


@dataclass(frozen=True)
class Fix:
    """A titled set of non-overlapping edits that together repair one finding."""

    title: str
    applicability: Applicability
    edits: tuple[Edit, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "applicability": self.applicability.value,
            "edits": [edit.to_json() for edit in self.edits],
        }


@dataclass(frozen=True)
class CellLocation:
    """Where a notebook finding lies: 0-based cell index and 1-based line in that cell."""

    cell: int
    line: int
    end_line: int

    def to_json(self) -> dict[str, int]:
        return {"cell": self.cell, "line": self.line, "end_line": self.end_line}


@dataclass(frozen=True)
class Finding:
    """One hazard at one place, with an optional fix."""

    path: str
    span: Span
    code: str
    name: str
    severity: Severity
    message: str
    fix: Fix | None = None
    cell: CellLocation | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def with_changes(self, **changes: Any) -> "Finding":
        return replace(self, **changes)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.span.line, self.span.column, self.code)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            **self.span.to_json(),
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.cell is not None:
            data["cell"] = self.cell.to_json()
        for key in ("hot_path", "device_from"):  # project context (see analysis.project)
            if key in self.extra:
                data[key] = self.extra[key]
        return data


SYNTAX_ERROR_CODE = "TT000"
INTERNAL_ERROR_CODE = "TT999"
