"""Code actions: a quick fix per fixable finding, a noqa suppression, and fix-all.

Edits are versioned (``TextDocumentEdit`` with the version the findings were
computed on), so a client never applies them to newer text.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Iterable

from lsprotocol import types

from ..analysis import fix_source
from ..analysis.engine import noqa_codes
from ..analysis.fixes import select_fixes
from ..analysis.text import split_lines
from ..findings import Applicability, Edit, Finding, Span
from .diagnostics import to_diagnostic
from .documents import DocumentState, TargetState
from .positions import Positions

if TYPE_CHECKING:
    from .server import TorchTriageServer

FIX_ALL_KIND = "source.fixAll.torchtriage"
_NOQA_LIST = re.compile(r"(#\s*noqa:\s*[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.I)


def _wanted(only: list[str] | None, kind: str) -> bool:
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def text_edits(edits: Iterable[Edit], positions: Positions) -> list[types.TextEdit]:
    return [types.TextEdit(range=positions.to_range(e.span), new_text=e.content) for e in edits]


def workspace_edit(target: TargetState, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    document = types.OptionalVersionedTextDocumentIdentifier(uri=target.uri, version=target.version)
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])


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


def minimal_edits(old: str, new: str) -> list[Edit]:
    """Whole-line edits turning ``old`` into ``new`` (one per changed block)."""
    a, b = split_lines(old, keepends=True), split_lines(new, keepends=True)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            edits.append(Edit(Span(i1 + 1, 1, i2 + 1, 1), "".join(b[j1:j2])))
    return edits


class CodeActions:
    """Builds code actions from the findings published on a target."""

    def __init__(self, server: "TorchTriageServer") -> None:
        self.server = server

    def fix_all_edits(self, state: DocumentState, target: TargetState) -> list[Edit]:
        """Safe fixes for the whole text: ``fix_source`` for files, one round per cell."""
        if state.notebook:
            fixes = select_fixes([f for f in target.findings if f.fix], unsafe=False)
            return [edit for fix in fixes for edit in fix.edits]
        settings = self.server.config.for_path(state.path)
        path = str(state.path) if state.path else state.uri
        result = fix_source(target.text, path, settings)
        return minimal_edits(target.text, result.source) if result.changed else []

    async def actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        state = self.server.store.get(uri)
        if state is None:
            return []
        await self.server.engine.current(state)
        target = state.targets.get(uri)
        if target is None:
            return []
        only = params.context.only
        positions = self.server.positions(target.text)
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
            edits = self.fix_all_edits(state, target)
            if edits:
                actions.append(
                    types.CodeAction(
                        title="torchtriage: fix all safely fixable findings",
                        kind=FIX_ALL_KIND,
                        edit=workspace_edit(target, text_edits(edits, positions)),
                    )
                )
        return actions
