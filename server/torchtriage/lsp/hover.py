"""Hover on a flagged range: the finding, the rule's explanation, and the profile line."""

from __future__ import annotations

from lsprotocol import types

from ..analysis import rule_by_code
from .documents import DocumentStore
from .texts import EditorTexts


def _contains(span_line: int, span_col: int, end_line: int, end_col: int, line: int, col: int) -> bool:
    return (span_line, span_col) <= (line, col) <= (end_line, end_col)


class Hover:
    """Markdown for the findings and profile annotation under the cursor."""

    def __init__(self, store: DocumentStore, texts: EditorTexts) -> None:
        self.store = store
        self.texts = texts

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        state = self.store.get(uri)
        target = state.targets.get(uri) if state else None
        if target is None:
            return None
        positions = self.texts.positions(target.text)
        line, col = params.position.line + 1, positions.to_column(params.position)
        parts: list[str] = []
        for finding in target.findings:
            span = finding.span
            if not _contains(span.line, span.column, span.end_line, span.end_column, line, col):
                continue
            rule = rule_by_code(finding.code)
            parts.append(f"**{finding.code}** {finding.message}")
            if rule is not None:
                parts.append(rule.explain().strip())
                parts.append(f"_More: `torchtriage explain {finding.code}`_")
        for annotation in target.annotations:
            if annotation.line == line and annotation.message:
                parts.append(f"**Profile:** {annotation.label} — {annotation.message}")
        if not parts:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts))
        )
