"""Fix all: every safe fix of one target, as the edits that turn its text into the fixed one.

Shared by the ``source.fixAll.torchtriage`` code action (eager, or lazily in
``codeAction/resolve``) and the ``torchtriage.fixAll`` command, so both give
the same edit for the same text.
"""

from __future__ import annotations

import difflib

from lsprotocol import types

from ..analysis import fix_source
from ..analysis.fixes import select_fixes
from ..analysis.text import split_lines
from ..findings import Edit, Span
from .documents import DocumentState, TargetState
from .edits import text_edits, workspace_edit
from .positions import Positions
from .settings import SettingsManager


def minimal_edits(old: str, new: str) -> list[Edit]:
    """Whole-line edits turning ``old`` into ``new`` (one per changed block)."""
    a, b = split_lines(old, keepends=True), split_lines(new, keepends=True)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            edits.append(Edit(Span(i1 + 1, 1, i2 + 1, 1), "".join(b[j1:j2])))
    return edits


class FixAll:
    """Computes the fix-all edits of a target with the document's effective settings."""

    def __init__(self, settings: SettingsManager) -> None:
        self._settings = settings

    def edits(self, state: DocumentState, target: TargetState) -> list[Edit]:
        """Safe fixes for the whole text: ``fix_source`` for files, one round per cell."""
        if state.notebook:
            fixes = select_fixes([f for f in target.findings if f.fix], unsafe=False)
            return [edit for fix in fixes for edit in fix.edits]
        settings = self._settings.for_path(state.path)
        path = str(state.path) if state.path else state.uri
        result = fix_source(target.text, path, settings)
        return minimal_edits(target.text, result.source) if result.changed else []

    def workspace_edit(self, state: DocumentState, target: TargetState, positions: Positions) -> types.WorkspaceEdit | None:
        """The versioned edit on the target, or None when there is nothing to fix."""
        edits = self.edits(state, target)
        return workspace_edit(target, text_edits(edits, positions)) if edits else None
