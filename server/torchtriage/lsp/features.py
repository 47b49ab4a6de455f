"""Handler registration: each LSP method -> one call into a feature object."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from lsprotocol import types

from .annotations import inlay_hints
from .code_actions import FIX_ALL_KIND
from .diagnostics import path_of
from .documents import LineMap, apply_line_map

if TYPE_CHECKING:
    from .server import TorchTriageServer

PYPROJECT_GLOB = "**/pyproject.toml"


def _is_python(document: types.TextDocumentItem) -> bool:
    return document.language_id == "python" or document.uri.endswith((".py", ".pyi"))


def _track_edits(server: "TorchTriageServer", uri: str, changes: Any) -> None:
    """Move findings and annotations of one target along with its edits."""
    state = server.store.get(uri)
    target = state.targets.get(uri) if state else None
    if target is None:
        return
    old = target.text
    for change in changes:
        apply_line_map(target, LineMap.for_change(change, old))
        if isinstance(change, types.TextDocumentContentChangeWholeDocument):
            old = change.text
    target.text = server.texts.source(uri)


def register_features(server: "TorchTriageServer", guarded: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    def feature(method: str, options: Any = None) -> Callable[[Callable[..., Any]], Any]:
        def decorator(handler: Callable[..., Any]) -> Any:
            return server.feature(method, options)(guarded(handler)) if options else server.feature(method)(guarded(handler))

        return decorator

    def command(name: str) -> Callable[[Callable[..., Any]], Any]:
        return lambda handler: server.command(name)(guarded(handler))

    # --- lifecycle and settings -------------------------------------------------

    @feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        server.config.update_client(params.initialization_options)

    @feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        if server.support.watched_files_registration:
            options = types.DidChangeWatchedFilesRegistrationOptions(
                watchers=[types.FileSystemWatcher(glob_pattern=PYPROJECT_GLOB)]
            )
            registration = types.Registration(
                id="torchtriage-pyproject", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
            )
            await server.channel.register(registration)

    @feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if settings is None and server.support.configuration:
            settings = await server.channel.configuration("torchtriage")
        server.config.update_client(settings)
        server.engine.refresh_all()

    @feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        changed = [path_of(event.uri) for event in params.changes if event.uri.endswith("pyproject.toml")]
        if changed:
            for path in changed:
                server.config.invalidate(path)
            server.engine.refresh_all()

    # --- text documents ---------------------------------------------------------

    @feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        if not _is_python(document):
            return
        state = server.store.open(document.uri, path_of(document.uri))
        target = state.target(document.uri)
        target.text, target.version = document.text, document.version
        server.engine.schedule(state, immediate=True)

    @feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        state = server.store.get(uri)
        if state is None:
            return
        _track_edits(server, uri, params.content_changes)
        state.target(uri).version = params.text_document.version
        server.engine.schedule(state)

    @feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("pyproject.toml"):
            server.config.invalidate(path_of(uri))
            server.engine.refresh_all()
        elif (state := server.store.get(uri)) is not None:
            server.engine.schedule(state, immediate=True)

    @feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        state = server.store.close(params.text_document.uri)
        if state is not None:
            for target in state.targets.values():
                server.engine.clear_target(target.uri)

    # --- notebooks --------------------------------------------------------------

    @feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(params: types.DidOpenNotebookDocumentParams) -> None:
        notebook = params.notebook_document
        state = server.store.open(notebook.uri, path_of(notebook.uri), notebook=True)
        for cell in params.cell_text_documents:
            server.store.bind(cell.uri, notebook.uri)
            target = state.target(cell.uri)
            target.text, target.version = cell.text, cell.version
        server.engine.schedule(state, immediate=True)

    @feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(params: types.DidChangeNotebookDocumentParams) -> None:
        state = server.store.get(params.notebook_document.uri)
        if state is None:
            return
        cells = params.change.cells
        for opened in (cells.structure.did_open or []) if cells and cells.structure else []:
            server.store.bind(opened.uri, state.uri)
            target = state.target(opened.uri)
            target.text, target.version = opened.text, opened.version
        for text in (cells.text_content or []) if cells else []:
            _track_edits(server, text.document.uri, text.changes)
            state.target(text.document.uri).version = text.document.version
        server.engine.schedule(state)

    @feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(params: types.DidSaveNotebookDocumentParams) -> None:
        if (state := server.store.get(params.notebook_document.uri)) is not None:
            server.engine.schedule(state, immediate=True)

    @feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(params: types.DidCloseNotebookDocumentParams) -> None:
        state = server.store.close(params.notebook_document.uri)
        for target in state.targets.values() if state else []:
            server.engine.clear_target(target.uri)

    # --- language features ------------------------------------------------------

    @feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(identifier="torchtriage", inter_file_dependencies=False, workspace_diagnostics=False),
    )
    async def pull_diagnostics(params: types.DocumentDiagnosticParams) -> types.RelatedFullDocumentDiagnosticReport:
        state = server.store.get(params.text_document.uri)
        if state is not None:
            await server.engine.current(state)
        return types.RelatedFullDocumentDiagnosticReport(items=server.engine.diagnostics_for(params.text_document.uri))

    @feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]),
    )
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        return await server.actions.actions(params)

    @feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        return server.hovers.hover(params)

    @feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(params: types.CodeLensParams) -> list[types.CodeLens]:
        return await server.lenses.lenses(params)

    @feature(types.TEXT_DOCUMENT_INLAY_HINT)
    def inlay_hint(params: types.InlayHintParams) -> list[types.InlayHint]:
        uri = params.text_document.uri
        state = server.store.get(uri)
        target = state.targets.get(uri) if state else None
        if target is None:
            return []
        return inlay_hints(target.annotations, server.texts.positions(target.text), params.range)

    # --- commands ---------------------------------------------------------------

    @command("torchtriage.profile")
    async def profile(*arguments: Any) -> Any:
        forget = server.protocol.cancel_with_request(asyncio.current_task())  # $/cancelRequest kills the run
        try:
            return await server.runner.profile(list(arguments), server.protocol.command_token.get())
        finally:
            forget()

    @command("torchtriage.clearProfile")
    def clear_profile(*arguments: Any) -> None:
        server.runner.clear_profile(list(arguments))

    @command("torchtriage.showReport")
    async def show_report(*arguments: Any) -> bool:
        return await server.runner.show_report(list(arguments))

    @command("torchtriage.fixAll")
    async def fix_all(*arguments: Any) -> bool:
        return await server.runner.fix_all(list(arguments))


__all__ = ["register_features", "Path"]
