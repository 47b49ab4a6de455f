"""The JSON-RPC protocol: pygls' own, plus cancellation of a running command."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any, Callable

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method


class TorchTriageProtocol(LanguageServerProtocol):
    """Keeps the client's work-done token and request id of ``workspace/executeCommand`` for the
    command, and lets ``$/cancelRequest`` for that request cancel the command's task.

    (pygls answers a cancelled ``executeCommand`` itself but leaves the command's own task
    running, since its built-in handler delegates to the command under another id.)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.command_token: contextvars.ContextVar[types.ProgressToken | None] = contextvars.ContextVar(
            "command_token", default=None
        )
        self.command_request: contextvars.ContextVar[object] = contextvars.ContextVar("command_request", default=None)
        self._cancellable: dict[object, asyncio.Task[Any]] = {}

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams):  # type: ignore[no-untyped-def]
        self.command_token.set(params.work_done_token)
        request_id = getattr(self, "_ctx_msg_id", None)
        self.command_request.set(request_id.get(None) if request_id is not None else None)
        return (yield from super().lsp_workspace__execute_command(params))

    def cancel_with_request(self, task: asyncio.Task[Any]) -> Callable[[], None]:
        """Cancel ``task`` when the client cancels the current command request; returns the
        function that forgets it again (call it when the task is done)."""
        request_id = self.command_request.get()
        if request_id is None:
            return lambda: None
        self._cancellable[request_id] = task

        def forget() -> None:
            self._cancellable.pop(request_id, None)

        return forget

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        super()._handle_cancel_notification(msg_id)
        task = self._cancellable.pop(msg_id, None)
        if task is not None and not task.done():
            task.cancel()
