"""Document sync: text documents and notebooks opened, edited, saved and closed.

Each handler updates the :class:`DocumentStore` (moving published findings
and annotations along with the edits) and schedules an analysis; pygls keeps
the texts themselves.
"""

from __future__ import annotations

from typing import Any, Callable

from lsprotocol import types

from .diagnostics import DiagnosticsEngine, path_of
from .documents import DocumentState, DocumentStore, LineMap, apply_line_map
from .registrar import Registrar
from .settings import SettingsManager
from .texts import EditorTexts
from .workspace_index import WorkspaceIndex


def is_python(document: types.TextDocumentItem) -> bool:
    """Whether an opened text document is one we analyse."""
    return document.language_id == "python" or document.uri.endswith((".py", ".pyi"))


def track_edits(store: DocumentStore, texts: EditorTexts, uri: str, changes: Any) -> None:
    """Move findings and annotations of one target along with its edits."""
    state = store.get(uri)
    target = state.targets.get(uri) if state else None
    if target is None:
        return
    old = target.text
    for change in changes:
        apply_line_map(target, LineMap.for_change(change, old))
        if isinstance(change, types.TextDocumentContentChangeWholeDocument):
            old = change.text
    target.text = texts.source(uri)


def register_text_documents(
    on: Registrar,
    store: DocumentStore,
    engine: DiagnosticsEngine,
    settings: SettingsManager,
    texts: EditorTexts,
    index: WorkspaceIndex | None = None,
    on_open: Callable[[DocumentState], None] | None = None,
) -> None:
    """``textDocument/didOpen|didChange|didSave|didClose``; each also updates the workspace index.
    ``on_open``: called with each opened document before its first analysis (an analysed trace's lines on it)."""

    @on.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        if not is_python(document):
            return
        state = store.open(document.uri, path_of(document.uri))
        target = state.target(document.uri)
        target.text, target.version = document.text, document.version
        if on_open is not None:
            on_open(state)
        engine.schedule(state, immediate=True)
        if index is not None:
            index.document_changed(state)

    @on.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        state = store.get(uri)
        if state is None:
            return
        track_edits(store, texts, uri, params.content_changes)
        state.target(uri).version = params.text_document.version
        engine.schedule(state)
        if index is not None:
            index.document_changed(state, edit=True)

    @on.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("pyproject.toml"):
            settings.invalidate(path_of(uri))
            engine.refresh_all()
        elif (state := store.get(uri)) is not None:
            engine.schedule(state, immediate=True)
            if index is not None:
                index.document_changed(state)

    @on.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        state = store.close(params.text_document.uri)
        if state is not None:
            for target in state.targets.values():
                engine.clear_target(target.uri)
            if index is not None:
                index.document_changed(state)  # other documents now see its text on disk


def register_notebook_documents(on: Registrar, store: DocumentStore, engine: DiagnosticsEngine, texts: EditorTexts) -> None:
    """``notebookDocument/didOpen|didChange|didSave|didClose``: all cells form one document."""

    @on.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(params: types.DidOpenNotebookDocumentParams) -> None:
        notebook = params.notebook_document
        state = store.open(notebook.uri, path_of(notebook.uri), notebook=True)
        for cell in params.cell_text_documents:
            store.bind(cell.uri, notebook.uri)
            target = state.target(cell.uri)
            target.text, target.version = cell.text, cell.version
        engine.schedule(state, immediate=True)

    @on.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(params: types.DidChangeNotebookDocumentParams) -> None:
        state = store.get(params.notebook_document.uri)
        if state is None:
            return
        cells = params.change.cells
        for opened in (cells.structure.did_open or []) if cells and cells.structure else []:
            store.bind(opened.uri, state.uri)
            target = state.target(opened.uri)
            target.text, target.version = opened.text, opened.version
        for text in (cells.text_content or []) if cells else []:
            track_edits(store, texts, text.document.uri, text.changes)
            state.target(text.document.uri).version = text.document.version
        engine.schedule(state)

    @on.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(params: types.DidSaveNotebookDocumentParams) -> None:
        if (state := store.get(params.notebook_document.uri)) is not None:
            engine.schedule(state, immediate=True)

    @on.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(params: types.DidCloseNotebookDocumentParams) -> None:
        state = store.close(params.notebook_document.uri)
        for target in state.targets.values() if state else []:
            engine.clear_target(target.uri)
