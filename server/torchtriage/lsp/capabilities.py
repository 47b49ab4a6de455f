"""What the client declared it supports (``initialize``'s ``capabilities``), read by name.

The capabilities arrive after the server is built, so :class:`ClientSupport`
reads them on demand; before ``initialize`` (or for anything the client left
out) every answer is "not supported".
"""

from __future__ import annotations

from typing import Any, Callable

from lsprotocol import types


class ClientSupport:
    """Answers "does the client support X?" for the features, from its declared capabilities."""

    def __init__(self, capabilities: Callable[[], types.ClientCapabilities | None]) -> None:
        self._capabilities = capabilities

    def get(self, *names: str) -> Any:
        """The capability at a path of attribute names (``"workspace", "configuration"``), or None."""
        value: Any = self._capabilities()
        for name in names:
            value = getattr(value, name, None)
            if value is None:
                return None
        return value

    @property
    def work_done_progress(self) -> bool:
        """Server-initiated ``$/progress`` (``window/workDoneProgress/create``)."""
        return bool(self.get("window", "work_done_progress"))

    @property
    def pulls_diagnostics(self) -> bool:
        """The client asks for diagnostics itself (``textDocument/diagnostic``): then the server
        does not also push them, or clients such as VS Code would show every one twice."""
        return self.get("text_document", "diagnostic") is not None

    @property
    def diagnostic_refresh(self) -> bool:
        return bool(self.get("workspace", "diagnostics", "refresh_support"))

    @property
    def code_lens_refresh(self) -> bool:
        return bool(self.get("workspace", "code_lens", "refresh_support"))

    @property
    def inlay_hint_refresh(self) -> bool:
        return bool(self.get("workspace", "inlay_hint", "refresh_support"))

    @property
    def watched_files_registration(self) -> bool:
        """``workspace/didChangeWatchedFiles`` may be registered dynamically."""
        return bool(self.get("workspace", "did_change_watched_files", "dynamic_registration"))

    @property
    def configuration(self) -> bool:
        """The server may ask for settings (``workspace/configuration``)."""
        return bool(self.get("workspace", "configuration"))

    @property
    def resolves_code_action_edits(self) -> bool:
        """A code action may come without its edit, to be filled in by ``codeAction/resolve``:
        the client resolves ``edit`` lazily and keeps an action's ``data`` until then."""
        properties = self.get("text_document", "code_action", "resolve_support", "properties") or ()
        return "edit" in properties and bool(self.get("text_document", "code_action", "data_support"))
