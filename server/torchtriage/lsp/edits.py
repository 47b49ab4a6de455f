"""Core edits -> LSP edits: versioned, so a client never applies them to newer text."""

from __future__ import annotations

from typing import Iterable

from lsprotocol import types

from ..findings import Edit
from .documents import TargetState
from .positions import Positions


def text_edits(edits: Iterable[Edit], positions: Positions) -> list[types.TextEdit]:
    """Core edits (character columns) as LSP text edits (client code units)."""
    return [types.TextEdit(range=positions.to_range(e.span), new_text=e.content) for e in edits]


def workspace_edit(target: TargetState, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    """One ``TextDocumentEdit`` on the target, with the version its findings were computed on."""
    return versioned_edit(target.uri, target.version, edits)


def versioned_edit(uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    """One ``TextDocumentEdit`` on ``uri`` at ``version`` (a client applies it to that version only)."""
    document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
