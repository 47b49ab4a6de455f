"""What the agent reports about the process it runs in: the device's name, the user's traceback.

Shared by the script session (``session.py``) and the in-kernel profiler
(``inkernel.py``); standard library and torch only.
"""

import os
import platform
import traceback
from typing import Sequence

import torch


def device_name(device: str) -> str:
    """The GPU's name for ``cuda``, else the processor's."""
    if device == "cuda":
        try:
            return torch.cuda.get_device_name(0)
        except Exception:
            return "cuda"
    return platform.processor() or platform.machine() or "cpu"


def user_traceback(exc: BaseException, ignored_dir: str, ignored_files: Sequence[str] = ()) -> str:
    """The traceback without our own frames (those under ``ignored_dir``, and files named in ``ignored_files``)."""
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(ignored_dir) and not any(name in f.filename for name in ignored_files)
    ]
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames) if frames else []
    return "".join(lines + traceback.format_exception_only(type(exc), exc))


def failed_to_compile(exc: SyntaxError, script: str) -> bool:
    """Whether ``exc`` is the script itself failing to compile (runpy compiling it, before any of it ran),
    not a SyntaxError the running script raised: ``ast.literal_eval`` of an argument, ``compile()`` of a
    string, or an import of a module that does not parse (those are the script raising, like any exception)."""
    script = os.path.realpath(script)
    if any(os.path.realpath(frame.filename) == script for frame in traceback.extract_tb(exc.__traceback__)):
        return False  # raised while the script ran
    return bool(exc.filename) and os.path.realpath(str(exc.filename)) == script
