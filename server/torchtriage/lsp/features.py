"""Handler registration: each LSP method -> one call into a feature object.

One function per area registers that area's handlers with the collaborators
they use: lifecycle and settings, language features, commands (document sync
is in :mod:`.sync`).  ``server.build_server`` wires them to the server.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any, Awaitable, Callable

from lsprotocol import types

from ..analysis.rules import all_rules
from .annotations import inlay_hints
from .capabilities import ClientSupport
from .client import ClientChannel
from .code_actions import FIX_ALL_KIND, CodeActions
from .code_lens import CodeLenses
from .commands import Commands
from .diagnostics import DiagnosticsEngine, path_of
from .documents import DocumentStore
from .hover import Hover
from .protocol import TorchTriageProtocol
from .registrar import Registrar
from .settings import SettingsManager
from .texts import EditorTexts
from .workspace_index import WorkspaceIndex


PYPROJECT_GLOB = "**/pyproject.toml"


def warm_up() -> None:
    """Before the client opens a document: load the rule modules (~0.1 s, else paid by the first
    diagnostics), then freeze what is loaded so far (modules, protocol types) out of the garbage
    collector's way, so its full collections scan only what the analyses keep."""
    all_rules()
    gc.collect()
    gc.freeze()
PYTHON_GLOB = "**/*.py"


def register_lifecycle(
    on: Registrar,
    settings: SettingsManager,
    engine: DiagnosticsEngine,
    channel: ClientChannel,
    support: ClientSupport,
    index: WorkspaceIndex | None = None,
) -> None:
    """``initialize``/``initialized``, configuration and pyproject changes."""

    @on.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        settings.update_client(params.initialization_options)
        warm_up()

    @on.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        if index is not None:
            index.close()

    @on.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        if support.watched_files_registration:
            options = types.DidChangeWatchedFilesRegistrationOptions(
                watchers=[
                    types.FileSystemWatcher(glob_pattern=PYPROJECT_GLOB),
                    types.FileSystemWatcher(glob_pattern=PYTHON_GLOB),
                ]
            )
            await channel.register(
                types.Registration(
                    id="torchtriage-pyproject", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
                )
            )

    @on.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        options = params.settings
        if options is None and support.configuration:
            options = await channel.configuration("torchtriage")
        settings.update_client(options)
        engine.refresh_all()

    @on.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        python = [event for event in params.changes if event.uri.endswith(".py")]
        if python and index is not None:
            paths = [p for p in (path_of(event.uri) for event in python) if p is not None]
            shape = any(event.type != types.FileChangeType.Changed for event in python)
            index.files_changed(paths, created_or_deleted=shape)
        changed = [path_of(event.uri) for event in params.changes if event.uri.endswith("pyproject.toml")]
        if changed:
            for path in changed:
                settings.invalidate(path)
            engine.refresh_all()


def register_language_features(
    on: Registrar,
    store: DocumentStore,
    engine: DiagnosticsEngine,
    texts: EditorTexts,
    actions: CodeActions,
    hovers: Hover,
    lenses: CodeLenses,
) -> None:
    """Pulled diagnostics, code actions (and their resolve), hover, code lenses and inlay hints."""

    @on.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(identifier="torchtriage", inter_file_dependencies=False, workspace_diagnostics=False),
    )
    async def pull_diagnostics(params: types.DocumentDiagnosticParams) -> types.RelatedFullDocumentDiagnosticReport:
        state = store.get(params.text_document.uri)
        if state is not None:
            await engine.current(state)
        return types.RelatedFullDocumentDiagnosticReport(items=engine.diagnostics_for(params.text_document.uri))

    @on.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=True),
    )
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        return await actions.actions(params)

    @on.feature(types.CODE_ACTION_RESOLVE)
    async def resolve_code_action(params: types.CodeAction) -> types.CodeAction:
        return await actions.resolve(params)

    @on.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        return hovers.hover(params)

    @on.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(params: types.CodeLensParams) -> list[types.CodeLens]:
        return await lenses.lenses(params)

    @on.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    def inlay_hint(params: types.InlayHintParams) -> list[types.InlayHint]:
        uri = params.text_document.uri
        state = store.get(uri)
        target = state.targets.get(uri) if state else None
        if target is None:
            return []
        return inlay_hints(target.annotations, texts.positions(target.text), params.range)


def register_commands(on: Registrar, runner: Commands, protocol: TorchTriageProtocol) -> None:
    """``workspace/executeCommand``: profile, lab, verifyFixes, analyze, applyVerifiedFixes, clearProfile, showReport, fixAll."""

    def cancellable(run: Callable[[list[Any], Any], Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """A command that runs the CLI in the background: ``$/cancelRequest`` kills its runs."""

        async def command(*arguments: Any) -> Any:
            forget = protocol.cancel_with_request(asyncio.current_task())
            try:
                return await run(list(arguments), protocol.command_token.get())
            finally:
                forget()

        return command

    on.command("torchtriage.profile")(cancellable(runner.profile))
    on.command("torchtriage.lab")(cancellable(runner.lab))
    on.command("torchtriage.verifyFixes")(cancellable(runner.verify_fixes))
    on.command("torchtriage.analyze")(cancellable(runner.analyze))

    @on.command("torchtriage.applyVerifiedFixes")
    async def apply_verified_fixes(*arguments: Any) -> bool:
        return await runner.apply_verified_fixes(list(arguments))

    @on.command("torchtriage.clearProfile")
    def clear_profile(*arguments: Any) -> None:
        runner.clear_profile(list(arguments))

    @on.command("torchtriage.showReport")
    async def show_report(*arguments: Any) -> bool:
        return await runner.show_report(list(arguments))

    @on.command("torchtriage.compare")
    def compare(*arguments: Any) -> Any:
        return runner.compare(list(arguments))

    @on.command("torchtriage.fixAll")
    async def fix_all(*arguments: Any) -> bool:
        return await runner.fix_all(list(arguments))


__all__ = ["register_commands", "register_language_features", "register_lifecycle"]
