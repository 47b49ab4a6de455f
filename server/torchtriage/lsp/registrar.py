"""Registers handlers on the pygls server, each wrapped in the one error guard."""

from __future__ import annotations

from typing import Any, Callable

from pygls.lsp.server import LanguageServer

Handler = Callable[..., Any]


class Registrar:
    """``on.feature(method, options)`` and ``on.command(name)`` decorators for handler groups."""

    def __init__(self, server: LanguageServer, guarded: Callable[[Handler], Handler]) -> None:
        self._server = server
        self._guarded = guarded

    def feature(self, method: str, options: Any = None) -> Callable[[Handler], Handler]:
        """Handle an LSP method (with its server capability ``options``, if any)."""

        def decorator(handler: Handler) -> Handler:
            register = self._server.feature(method, options) if options else self._server.feature(method)
            return register(self._guarded(handler))

        return decorator

    def command(self, name: str) -> Callable[[Handler], Handler]:
        """Handle one ``workspace/executeCommand`` command."""
        return lambda handler: self._server.command(name)(self._guarded(handler))
