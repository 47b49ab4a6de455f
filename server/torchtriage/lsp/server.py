"""The language server: construction and wiring; each feature lives in its own module.

Public contract (documented in the README):

Commands (``workspace/executeCommand``):
  ``torchtriage.profile [uri]``       profile the document's script (notebook: its code
                                      cells joined) in a background process; ``$/progress``
                                      begin/report/end, cancellable; returns the
                                      ``torchtriage/profileReport`` payload.
  ``torchtriage.lab [uri | {uri, modes, steps, warmup, repeat}]``  run the script as fp32,
                                      bf16 autocast and bf16 + torch.compile in the background;
                                      ``$/progress``, cancellable; returns the
                                      ``torchtriage/labReport`` payload.
  ``torchtriage.verifyFixes [{uri, repeat}]``  measure each fix on runs of the saved script
                                      (``fix --verify``) in the background; ``$/progress``,
                                      cancellable; returns the ``torchtriage/verifyReport`` payload.
  ``torchtriage.analyze [path | {path}]``  analyse a trace recorded with torch.profiler elsewhere
                                      (``torchtriage analyze``; the workspace folders as source roots)
                                      in the background; ``$/progress``, cancellable; annotates the
                                      files its hot lines are on (open now or later); returns the
                                      ``torchtriage/profileReport`` payload with ``fromTrace: true``.
  ``torchtriage.applyVerifiedFixes [{uri, verifyJson}]``  apply the fixes that helped via
                                      ``workspace/applyEdit`` (refused, with a message, when the
                                      editor's text is not the text verified); whether applied.
  ``torchtriage.clearProfile [uri]``  remove profile inlay hints, diagnostics and lenses.
  ``torchtriage.showReport [reportPath]``  open report.html (else report.json) via
                                      ``window/showDocument``.
  ``torchtriage.fixAll [uri]``        apply every safe fix via ``workspace/applyEdit``.
  ``torchtriage.compare [{runA, runB} | {uri, baseline: "last"}]``  compare two runs
                                      (compare.json into the newer one); returns that document.

Notification (server -> client) ``torchtriage/profileReport``::

  {"uri": str, "reportPath": str, "htmlPath": str | null,
   "summary": {"bottleneck": str, "share": float (0-1), "stepTimeMs": float},
   "hotLines": [...], "comparison"?: {comparePath, previousReportPath, verdict, document},
   "fromTrace"?: true, "tracePath"?: str, "files"?: [uri]}  (the last three from torchtriage.analyze)

Notification (server -> client) ``torchtriage/labReport``: lab.json in brief (see
``lsp/lab_report.py``): ``{uri, labPath, htmlPath, device, verdict, reading, rows}``.

Notification (server -> client) ``torchtriage/verifyReport``: the verify.json document with
``uri`` and ``verifyJson`` (its path) added (see ``lsp/verify_report.py``).

Code action kinds: ``quickfix`` (one per fix, one noqa suppression per finding) and
``source.fixAll.torchtriage`` (resolved lazily through ``codeAction/resolve`` for a
client that declares ``resolveSupport`` for ``edit`` and ``dataSupport``; with its
edit otherwise).  Diagnostics: source ``torchtriage`` (static, code
TTnnn) and ``torchtriage-profile`` (Information, from the last profile).

Options (``initializationOptions`` or ``workspace/didChangeConfiguration``, either
plain or under ``"torchtriage"``): the ``[tool.torchtriage]`` keys (select, ignore,
extend-select, per-file-ignores, severity, device, exclude) plus ``debounceMs``
and ``interpreter`` (the Python that runs profiles).  A pyproject
``[tool.torchtriage]`` next to the document is applied over them.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from .. import __version__
from .background import Background
from .capabilities import ClientSupport
from .client import ClientChannel
from .code_actions import FIX_ALL_KIND, CodeActions
from .code_lens import CodeLenses
from .commands import Commands
from .diagnostics import DiagnosticsEngine
from .documents import DocumentStore
from .features import register_commands, register_language_features, register_lifecycle
from .fix_all import FixAll
from .hover import Hover
from .protocol import TorchTriageProtocol
from .registrar import Registrar
from .settings import SettingsManager
from .sync import register_notebook_documents, register_text_documents
from .texts import EditorTexts
from .workspace_index import WorkspaceIndex

log = logging.getLogger(__name__)

NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")]
        )
    ],
    save=True,
)


class TorchTriageServer(LanguageServer):
    """The composition root: builds each feature with the collaborators it uses."""

    protocol: TorchTriageProtocol

    def __init__(self) -> None:
        super().__init__(
            "torchtriage",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=NOTEBOOK_SYNC,
            protocol_cls=TorchTriageProtocol,
        )
        self.channel = ClientChannel(self)
        self.support = ClientSupport(lambda: self.client_capabilities)
        self.texts = EditorTexts(lambda: self.workspace)
        self.background = Background(lambda message: self.channel.show(message, types.MessageType.Error))
        self.store = DocumentStore()
        self.config = SettingsManager(warn=lambda message: self.channel.show(message, types.MessageType.Warning))
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="torchtriage-analysis")
        self.engine = DiagnosticsEngine(
            self.store, self.config, self.texts, self.channel, self.support, self.executor, self.background.spawn
        )
        self.index = WorkspaceIndex(self.store, self.config, self.executor, self.background.spawn)
        self.index.engine = self.engine
        self.fix_all = FixAll(self.config, self.executor, self.texts.positions)
        self.actions = CodeActions(self.store, self.engine, self.texts, self.support, self.fix_all)
        self.hovers = Hover(self.store, self.texts)
        self.lenses = CodeLenses(self.store, self.engine, self.texts, self.executor)
        self.runner = Commands(self.store, self.engine, self.config, self.texts, self.channel, self.support, self.fix_all)


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
    """The server with every handler registered."""
    server = TorchTriageServer()
    on = Registrar(server, guarded)
    # Each handler group gets the collaborators it uses, never the server itself.
    register_lifecycle(on, server.config, server.engine, server.channel, server.support, server.index)
    register_text_documents(on, server.store, server.engine, server.config, server.texts, server.index, server.runner.opened)
    register_notebook_documents(on, server.store, server.engine, server.texts)
    register_language_features(on, server.store, server.engine, server.texts, server.actions, server.hovers, server.lenses)
    register_commands(on, server.runner, server.protocol)
    return server


__all__ = ["FIX_ALL_KIND", "TorchTriageServer", "build_server", "guarded"]
