"""Fix all: every safe fix of one target, as the edits that turn its text into the fixed one.

Shared by the ``source.fixAll.torchtriage`` code action (eager, or lazily in
``codeAction/resolve``) and the ``torchtriage.fixAll`` command, so both give
the same edit for the same text.

Fixing a file analyses it, then re-analyses what each round changed (150-270 ms
on timm's 1,534-line ``train.py``), so it runs on the analysis threads, never on
the event loop: edits
the user types meanwhile are read and analysed at once.  The edit is for the
text it was computed on; the caller learns whether the document moved on.
"""

from __future__ import annotations

import asyncio
import difflib
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Callable

from lsprotocol import types

from ..analysis import fix_source
from ..analysis.fixes import select_fixes
from ..analysis.project_view import ProjectView
from ..analysis.text import split_lines
from ..config import Settings
from ..findings import Edit, Finding, Span
from ..gcpause import collector_pause
from .documents import DocumentState, TargetState
from .edits import text_edits, versioned_edit
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


@dataclass(frozen=True)
class FixAllEdit:
    """A fix-all computed for one version of a target: ``edit`` is None when nothing would change."""

    version: int | None
    edit: types.WorkspaceEdit | None


def _fixed_edits(
    text: str, path: str, settings: Settings, notebook: bool, findings: list[Finding], project: ProjectView | None
) -> list[Edit]:
    """Safe fixes for the whole text (worker thread): ``fix_source`` for files, one round per cell."""
    if notebook:
        fixes = select_fixes([f for f in findings if f.fix], unsafe=False)
        return [edit for fix in fixes for edit in fix.edits]
    with collector_pause.during_analysis():
        result = fix_source(text, path, settings, project=project)
    return minimal_edits(text, result.source) if result.changed else []


class FixAll:
    """Computes the fix-all edits of a target with the document's effective settings and project view."""

    def __init__(self, settings: SettingsManager, executor: Executor, positions: Callable[[str], Positions]) -> None:
        self._settings = settings
        self._executor = executor
        self._positions = positions

    async def compute(self, state: DocumentState, target: TargetState) -> FixAllEdit:
        """The fix-all of the target's current text, computed on an analysis thread.  The
        document may change meanwhile: compare :attr:`FixAllEdit.version` with the target's."""
        uri, version, text = target.uri, target.version, target.text
        settings = self._settings.for_path(state.path)
        path = str(state.path) if state.path else state.uri
        edits = await asyncio.get_running_loop().run_in_executor(
            self._executor, _fixed_edits, text, path, settings, state.notebook, list(target.findings), state.project_view
        )
        if not edits:
            return FixAllEdit(version, None)
        return FixAllEdit(version, versioned_edit(uri, version, text_edits(edits, self._positions(text))))

