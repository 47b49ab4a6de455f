"""The language server spec jupyter-lsp finds through the ``jupyter_lsp_spec_v1`` entry point.

jupyter-lsp starts ``python -m torchtriage lsp`` (this interpreter: the
server's environment) and proxies it to jupyterlab-lsp over a websocket.
The server is registered for the ``python`` language beside the user's own
Python server (pylsp, jedi-language-server, pyright): it answers only
diagnostics, code actions and hover (no completion), so jupyterlab-lsp can
show both.
"""

from __future__ import annotations

import sys
from typing import Any

KEY = "torchtriage"


def spec(manager: Any = None) -> dict[str, dict[str, Any]]:
    return {
        KEY: {
            "version": 2,
            "argv": [sys.executable, "-m", "torchtriage", "lsp"],
            "languages": ["python"],
            "mime_types": ["text/python", "text/x-ipython"],
            "display_name": "torchtriage (PyTorch performance hazards)",
            "urls": {"home": "https://github.com/torchtriage/torchtriage"},
            "install": {"pip": 'pip install "torchtriage[jupyter]"'},
            "requires_documentation_on_disk": False,
            "in_process": False,
        }
    }
