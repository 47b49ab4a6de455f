"""Code actions: a quick fix per fixable finding, a noqa suppression, and fix-all.

Edits are versioned (``TextDocumentEdit`` with the version the findings were
computed on), so a client never applies them to newer text.

Quick fixes and suppressions always come with their edits (each is one
finding's own edit: cheap).  Fix-all is costly for a file (a full analysis
plus a re-analysis per fix round), so for a client that resolves edits lazily
(``textDocument.codeAction.resolveSupport.properties`` has ``"edit"`` and
``dataSupport`` is set, as VS Code does) it comes without its edit and
with ``data = {"uri", "version"}``; ``codeAction/resolve`` computes the edit
only when the user picks it.  Any other client gets it eagerly, as before
(then it is left out when nothing would change; a resolved one gets an empty
edit instead).
"""

from __future__ import annotations

import re

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcInvalidParams

from ..analysis.engine import noqa_codes
from ..findings import Applicability, Edit, Finding, Span
from .capabilities import ClientSupport
from .diagnostics import DiagnosticsEngine, to_diagnostic
from .documents import DocumentState, DocumentStore, TargetState
from .edits import text_edits, versioned_edit, workspace_edit
from .fix_all import FixAll
from .positions import Positions
from .texts import EditorTexts

FIX_ALL_KIND = "source.fixAll.torchtriage"
FIX_ALL_TITLE = "torchtriage: fix all safely fixable findings"
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
    """Builds code actions from the findings published on a target, and resolves lazy fix-all."""

    def __init__(
        self, store: DocumentStore, engine: DiagnosticsEngine, texts: EditorTexts, support: ClientSupport, fix_all: FixAll
    ) -> None:
        self.store = store
        self.engine = engine
        self.texts = texts
        self.support = support
        self.fixer = fix_all

    async def actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """``textDocument/codeAction``: quick fixes and suppressions in the range, then fix-all."""
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
        actions = self._quick_fixes(target, positions, positions.to_span(params.range), only)
        fixable = any(f.fix and f.fix.applicability is Applicability.SAFE for f in target.findings)
        if fixable and (only is not None and _wanted(only, FIX_ALL_KIND) or only is None):
            fix_all = await self._fix_all(state, target)
            if fix_all is not None:
                actions.append(fix_all)
        return actions

    def _quick_fixes(
        self, target: TargetState, positions: Positions, wanted: Span, only: list[str] | None
    ) -> list[types.CodeAction]:
        """A fix and a ``# noqa`` per finding in the range (cheap: always with their edits)."""
        actions: list[types.CodeAction] = []
        if not _wanted(only, types.CodeActionKind.QuickFix):
            return actions
        for finding in target.findings:
            if finding.span.line > wanted.end_line or finding.span.end_line < wanted.line:
                continue
            if finding.code == "TT000":
                continue
            diagnostic = to_diagnostic(finding, positions)
            if finding.fix is not None:
                actions.append(
                    types.CodeAction(
                        title=f"{finding.fix.title} ({finding.code})",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        is_preferred=finding.fix.applicability is Applicability.SAFE,
                        edit=workspace_edit(target, text_edits(finding.fix.edits, positions)),
                    )
                )
            edit = noqa_edit(finding, positions.lines)
            if edit is not None:
                actions.append(
                    types.CodeAction(
                        title=f"Suppress with `# noqa: {finding.code}`",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=workspace_edit(target, text_edits([edit], positions)),
                    )
                )
        return actions

    async def _fix_all(self, state: DocumentState, target: TargetState) -> types.CodeAction | None:
        """Fix-all: without its edit (``data`` says which text) for a client that resolves edits,
        else with it (None when nothing would change)."""
        if self.support.resolves_code_action_edits:
            return types.CodeAction(
                title=FIX_ALL_TITLE, kind=FIX_ALL_KIND, data={"uri": target.uri, "version": target.version}
            )
        fixed = await self.fixer.compute(state, target)
        return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL_KIND, edit=fixed.edit) if fixed.edit is not None else None

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        """``codeAction/resolve``: fill in a lazily offered fix-all's edit; other actions come back as they are.

        The edit is for the text the action was offered on: if the document has changed
        since (or changes while the edit is computed), the request fails with
        ContentModified (the client asks for actions again).
        """
        data = action.data
        if action.kind != FIX_ALL_KIND or action.edit is not None or not isinstance(data, dict):
            return action
        uri, version = data.get("uri"), data.get("version")
        state = self.store.get(uri) if isinstance(uri, str) else None
        if state is None:
            raise JsonRpcInvalidParams(f"{uri} is not open")
        await self.engine.current(state)
        target = state.targets.get(uri)
        if target is None or target.version != version:
            raise JsonRpcContentModified(f"{uri} has changed since this action was offered")
        fixed = await self.fixer.compute(state, target)
        now = state.targets.get(uri) if self.store.get(uri) is state else None
        if now is None or now.version != fixed.version:
            raise JsonRpcContentModified(f"{uri} changed while its fixes were computed")
        action.edit = fixed.edit if fixed.edit is not None else versioned_edit(uri, fixed.version, [])
        return action
