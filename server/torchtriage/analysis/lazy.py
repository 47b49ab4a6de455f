"""Heavy optional imports, loaded on first use.

libcst takes ~165 ms to import; only fixes need it, so checking a file with
no fixable finding (most files, in CI and pre-commit) never pays for it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands in for a module until an attribute is first read."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    @property
    def loaded(self) -> bool:
        return self._module is not None

    def load(self) -> None:
        """Import the module now (the language server does it off its event loop, see
        :meth:`..lsp.diagnostics.DiagnosticsEngine`)."""
        if self._module is None:
            self._module = importlib.import_module(self._name)

    def __getattr__(self, attribute: str) -> Any:
        if self._module is None:
            self.load()
        return getattr(self._module, attribute)


libcst = LazyModule("libcst")
