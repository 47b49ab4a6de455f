"""The language server: construction and wiring; each feature lives in its own module.

Public contract (documented in the README):

Commands (``workspace/executeCommand``):
  ``torchtriage.profile [uri]``       profile the document's script (notebook: its code
                                      cells joined) in a background process; ``$/progress``
                                      begin/report/end, cancellable; returns the
                                      ``torchtriage/profileReport`` payload.
  ``torchtriage.clearProfile [uri]``  remove profile inlay hints, diagnostics and lenses.
  ``torchtriage.showReport [reportPath]``  open report.html (else report.json) via
                                      ``window/showDocument``.
  ``torchtriage.fixAll [uri]``        apply every safe fix via ``workspace/applyEdit``.

Notification (server -> client) ``torchtriage/profileReport``::

  {"uri": str, "reportPath": str, "htmlPath": str | null,
   "summary": {"bottleneck": str, "share": float (0-1), "stepTimeMs": float}}

Code action kinds: ``quickfix`` (one per fix, one noqa suppression per finding) and
``source.fixAll.torchtriage``.  Diagnostics: source ``torchtriage`` (static, code
TTnnn) and ``torchtriage-profile`` (Information, from the last profile).

Options (``initializationOptions`` or ``workspace/didChangeConfiguration``, either
plain or under ``"torchtriage"``): the ``[tool.torchtriage]`` keys (select, ignore,
extend-select, per-file-ignores, severity, device, exclude) plus ``debounceMs``
and ``interpreter`` (the Python that runs profiles).  A pyproject
``[tool.torchtriage]`` next to the document is applied over them.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from .. import __version__
from .code_actions import FIX_ALL_KIND, CodeActions
from .code_lens import CodeLenses
from .commands import Commands
from .diagnostics import DiagnosticsEngine
from .documents import DocumentStore
from .features import register_features
from .hover import Hover
from .positions import Positions
from .settings import SettingsManager

log = logging.getLogger(__name__)

NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")]
        )
    ],
    save=True,
)


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


class TorchTriageServer(LanguageServer):
    """State lives here; handlers are thin calls into the feature objects."""

    protocol: TorchTriageProtocol

    def __init__(self) -> None:
        super().__init__(
            "torchtriage",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=NOTEBOOK_SYNC,
            protocol_cls=TorchTriageProtocol,
        )
        self.store = DocumentStore()
        self.config = SettingsManager(warn=lambda message: self.show(message, types.MessageType.Warning))
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="torchtriage-analysis")
        self.engine = DiagnosticsEngine(self, self.store, self.executor)
        self.actions = CodeActions(self)
        self.hovers = Hover(self)
        self.lenses = CodeLenses(self)
        self.runner = Commands(self)

    # --- helpers shared by the features ---------------------------------------------

    def positions(self, text: str) -> Positions:
        try:
            encoding = self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        except RuntimeError:  # not initialized yet
            encoding = types.PositionEncodingKind.Utf16
        return Positions(text, str(encoding))

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def _capability(self, *names: str) -> Any:
        value: Any = self.client_capabilities
        for name in names:
            value = getattr(value, name, None)
            if value is None:
                return None
        return value

    def supports_progress(self) -> bool:
        return bool(self._capability("window", "work_done_progress"))

    def pulls_diagnostics(self) -> bool:
        """The client asks for diagnostics itself (``textDocument/diagnostic``): then the server
        does not also push them, or clients such as VS Code would show every one twice."""
        return self._capability("text_document", "diagnostic") is not None

    def supports_diagnostic_refresh(self) -> bool:
        return bool(self._capability("workspace", "diagnostics", "refresh_support"))

    def supports_lens_refresh(self) -> bool:
        return bool(self._capability("workspace", "code_lens", "refresh_support"))

    def supports_inlay_refresh(self) -> bool:
        return bool(self._capability("workspace", "inlay_hint", "refresh_support"))

    def spawn(self, coroutine: Any) -> "asyncio.Task[Any]":
        """Run a coroutine in the background; its failure is logged, not lost."""
        task = asyncio.ensure_future(coroutine)
        task.add_done_callback(self._log_failure)
        return task

    def _log_failure(self, task: "asyncio.Future[Any]") -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())
            self.show(f"torchtriage: internal error: {task.exception()}", types.MessageType.Error)


def guarded(handler: Callable[..., Any]) -> Callable[..., Any]:
    """The one error wrapper: log unexpected exceptions with their traceback, then
    let pygls answer (requests get an LSP error, notifications a showMessage)."""

    def log_it(exc: Exception) -> None:
        if not isinstance(exc, (JsonRpcException, asyncio.CancelledError)):
            log.exception("handler %s failed", handler.__name__)

    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def async_wrapper(*args: Any) -> Any:
            try:
                return await handler(*args)
            except Exception as exc:
                log_it(exc)
                raise

        return async_wrapper

    @functools.wraps(handler)
    def wrapper(*args: Any) -> Any:
        try:
            return handler(*args)
        except Exception as exc:
            log_it(exc)
            raise

    return wrapper


def build_server() -> TorchTriageServer:
    server = TorchTriageServer()
    register_features(server, guarded)
    return server


__all__ = ["FIX_ALL_KIND", "TorchTriageServer", "build_server", "guarded"]
