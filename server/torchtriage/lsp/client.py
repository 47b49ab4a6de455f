"""Messages from the server to the client: the one door the features send through.

The features never hold the pygls server; they get a :class:`ClientChannel`
and say what to tell the client (publish these diagnostics, ask it to pull
again, apply this edit ...).  Whether the client supports a request is the
caller's question (:class:`~torchtriage.lsp.capabilities.ClientSupport`).
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.progress import Progress


class ClientChannel:
    """Sends notifications and requests to the client of one pygls server."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server

    # --- notifications ------------------------------------------------------------

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """``window/showMessage``."""
        self._server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def publish_diagnostics(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None = None) -> None:
        """``textDocument/publishDiagnostics`` (``version`` left out when None)."""
        self._server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def notify(self, method: str, payload: Any) -> None:
        """A custom notification (``torchtriage/profileReport``)."""
        self._server.protocol.notify(method, payload)

    # --- "ask again" requests, answered by nothing we wait for ------------------------

    def refresh_diagnostics(self) -> None:
        self._server.workspace_diagnostic_refresh(None)

    def refresh_code_lenses(self) -> None:
        self._server.workspace_code_lens_refresh(None)

    def refresh_inlay_hints(self) -> None:
        self._server.workspace_inlay_hint_refresh(None)

    # --- requests ---------------------------------------------------------------------

    @property
    def progress(self) -> Progress:
        """pygls' ``$/progress`` helper (create, begin, report, end; the tokens it tracks)."""
        return self._server.work_done_progress

    async def show_document(self, uri: str, external: bool) -> bool:
        """``window/showDocument``: whether the client showed it."""
        result = await self._server.window_show_document_async(types.ShowDocumentParams(uri=uri, external=external))
        return bool(result and result.success)

    async def apply_edit(self, edit: types.WorkspaceEdit, label: str) -> bool:
        """``workspace/applyEdit``: whether the client applied it."""
        result = await self._server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))
        return bool(result.applied)

    async def configuration(self, section: str) -> Any:
        """``workspace/configuration`` for one section."""
        items = [types.ConfigurationItem(section=section)]
        return (await self._server.workspace_configuration_async(types.ConfigurationParams(items=items)))[0]

    async def register(self, registration: types.Registration) -> None:
        """``client/registerCapability`` for one registration."""
        await self._server.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
