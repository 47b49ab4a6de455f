"""The texts the client has open, as pygls keeps them in step with its edits.

What the features read from the editor's side: a document's current source,
a snapshot of a document (or a notebook's code cells) to analyse, and the
negotiated column encoding (:class:`Positions`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from .documents import DocumentState
from .positions import Positions

Snapshot = list[tuple[str, int | None, str]]  # (target uri, version, text) in cell order


class EditorTexts:
    """Reads pygls' workspace (available once the client has initialized)."""

    def __init__(self, workspace: Callable[[], Workspace]) -> None:
        self._workspace = workspace

    def positions(self, text: str) -> Positions:
        """Column conversion for ``text`` in the encoding the client negotiated (UTF-16 before that)."""
        try:
            encoding = self._workspace().position_encoding or types.PositionEncodingKind.Utf16
        except RuntimeError:  # not initialized yet
            encoding = types.PositionEncodingKind.Utf16
        return Positions(text, str(encoding))

    def folders(self) -> list[Path]:
        """The client's workspace folders as local paths (its root when it named no folders); empty before initialize."""
        try:
            workspace = self._workspace()
        except RuntimeError:  # not initialized yet
            return []
        uris = [folder.uri for folder in workspace.folders.values()] or ([workspace.root_uri] if workspace.root_uri else [])
        paths = [to_fs_path(uri) for uri in uris if uri.startswith("file:")]
        return [Path(path) for path in paths if path]

    def source(self, uri: str) -> str:
        """The current text of an open text document or cell."""
        return self._workspace().get_text_document(uri).source

    def snapshot(self, state: DocumentState) -> Snapshot:
        """The document's text, or its Python code cells in order, with their versions."""
        workspace = self._workspace()
        if not state.notebook:
            document = workspace.get_text_document(state.uri)
            return [(state.uri, document.version, document.source)]
        notebook = workspace.get_notebook_document(notebook_uri=state.uri)
        cells: Snapshot = []
        for cell in notebook.cells if notebook else []:
            # pygls keys documents by the decoded URI; VS Code's cell URIs are percent-encoded (``%3D%3D``).
            document = workspace.text_documents.get(unquote(cell.document))
            if cell.kind == types.NotebookCellKind.Code and document is not None:
                if document.language_id in (None, "python"):
                    cells.append((cell.document, document.version, document.source))
        return cells
