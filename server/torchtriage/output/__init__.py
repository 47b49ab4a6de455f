"""Findings rendered for people (text) and machines (json, sarif, github)."""

from __future__ import annotations

from typing import Callable, Sequence

from ..checker import FileReport
from . import json_format, text_format

Formatter = Callable[[Sequence[FileReport]], str]

FORMATTERS: dict[str, Formatter] = {
    "text": text_format.render,
    "json": json_format.render,
}


def register(name: str, formatter: Formatter) -> None:
    FORMATTERS[name] = formatter


def _load_optional() -> None:
    """Formats living in their own modules register themselves on import."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        if info.name not in ("text_format", "json_format"):
            importlib.import_module(f"{__name__}.{info.name}")


_load_optional()
