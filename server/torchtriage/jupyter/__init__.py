"""torchtriage in Jupyter: the ``%%torchtriage`` magic, the jupyter-server extension, the LSP spec.

A host like the CLI and the language server: it translates, the core analyses.
"""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext torchtriage.jupyter`` (``%load_ext torchtriage`` does the same)."""
    from .magic import load_ipython_extension as load

    load(ipython)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "torchtriage.jupyter"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    from .handlers import setup_handlers

    setup_handlers(server_app)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "torchtriage-jupyterlab"}]
