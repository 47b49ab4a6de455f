"""Code actions: a quick fix per fixable finding, a noqa suppression, and fix-all.

Edits are versioned (``TextDocumentEdit`` with the version the findings were
computed on), so a client never applies them to newer text.
"""

from __future__ import annotations

import re

from lsprotocol import types

from ..analysis.engine import noqa_codes
from ..findings import Applicability, Edit, Finding, Span
from .capabilities import ClientSupport
from .diagnostics import DiagnosticsEngine, to_diagnostic
from .documents import DocumentStore
from .edits import text_edits, workspace_edit
from .fix_all import FixAll
from .texts import EditorTexts

FIX_ALL_KIND = "source.fixAll.torchtriage"
_NOQA_LIST = re.compile(r"(#\s*noqa:\s*[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.I)


def _wanted(only: list[str] | None, kind: str) -> bool:
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def noqa_edit(finding: Finding, lines: list[str]) -> Edit | None:
    """Append ``# noqa: CODE`` to the finding's line, or add the code to its noqa list."""
    line = lines[finding.span.line - 1] if finding.span.line <= len(lines) else ""
    codes = noqa_codes(line)
    if codes is not None and (not codes or finding.code in codes):
        return None
    match = _NOQA_LIST.search(line) if codes else None
    if match is not None:
        end = match.end() + 1
        return Edit(Span(finding.span.line, end, finding.span.line, end), f", {finding.code}")
    end = len(line.rstrip()) + 1
    return Edit(Span(finding.span.line, end, finding.span.line, len(line) + 1), f"  # noqa: {finding.code}")


class CodeActions:
    """Builds code actions from the findings published on a target."""

    def __init__(
        self, store: DocumentStore, engine: DiagnosticsEngine, texts: EditorTexts, support: ClientSupport, fix_all: FixAll
    ) -> None:
        self.store = store
        self.engine = engine
        self.texts = texts
        self.support = support
        self.fixer = fix_all

    async def actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        state = self.store.get(uri)
        if state is None:
            return []
        await self.engine.current(state)
        target = state.targets.get(uri)
        if target is None:
            return []
        only = params.context.only
        positions = self.texts.positions(target.text)
        wanted = positions.to_span(params.range)
        lines = positions.lines
        actions: list[types.CodeAction] = []
        for finding in target.findings:
            if finding.span.line > wanted.end_line or finding.span.end_line < wanted.line:
                continue
            if finding.code == "TT000":
                continue
            diagnostic = to_diagnostic(finding, positions)
            if finding.fix is not None and _wanted(only, types.CodeActionKind.QuickFix):
                actions.append(
                    types.CodeAction(
                        title=f"{finding.fix.title} ({finding.code})",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        is_preferred=finding.fix.applicability is Applicability.SAFE,
                        edit=workspace_edit(target, text_edits(finding.fix.edits, positions)),
                    )
                )
            edit = noqa_edit(finding, lines)
            if edit is not None and _wanted(only, types.CodeActionKind.QuickFix):
                actions.append(
                    types.CodeAction(
                        title=f"Suppress with `# noqa: {finding.code}`",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=workspace_edit(target, text_edits([edit], positions)),
                    )
                )
        fixable = any(f.fix and f.fix.applicability is Applicability.SAFE for f in target.findings)
        if fixable and (only is not None and _wanted(only, FIX_ALL_KIND) or only is None):
            edit = self.fixer.workspace_edit(state, target, positions)
            if edit is not None:
                actions.append(
                    types.CodeAction(title="torchtriage: fix all safely fixable findings", kind=FIX_ALL_KIND, edit=edit)
                )
        return actions
