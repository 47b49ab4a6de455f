"""The text of the profiled files as they were when the report was written (report.json ``sources``).

A later run of an edited script has its lines moved; ``torchtriage compare``
maps the hot lines of one run onto the other by diffing these texts (content
and position, not line numbers).  Only the script and the user files the
report names (hot lines, static findings) are kept, each at most
``MAX_CHARS`` characters (a longer file keeps its hash, not its text).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterable

MAX_CHARS = 400_000  # a longer file keeps its hash only
MAX_FILES = 12


def source_entry(path: str) -> dict[str, Any] | None:
    """``{path, sha256, text}`` for one file (text None when too long); None when unreadable."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    return {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "text": text if len(text) <= MAX_CHARS else None}


def source_texts(paths: Iterable[str]) -> list[dict[str, Any]]:
    """The entries of the first ``MAX_FILES`` distinct readable paths, in the order given."""
    entries = []
    for path in dict.fromkeys(p for p in paths if p):
        if len(entries) >= MAX_FILES:
            break
        entry = source_entry(path)
        if entry is not None:
            entries.append(entry)
    return entries
