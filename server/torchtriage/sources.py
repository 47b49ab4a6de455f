"""Finding and reading the files to check: folders walked, junk skipped, bytes decoded."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from .config import Settings

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache",
        ".ruff_cache", ".tox", ".nox", ".venv", "venv", "env", ".env", "build", "dist",
        "site-packages", ".eggs", ".ipynb_checkpoints", ".torchtriage", ".hypothesis",
    }
)
CHECKED_SUFFIXES = (".py", ".pyi", ".ipynb")
MAX_BYTES = 10 * 1024 * 1024
_TORCH_MENTION = re.compile(rb"torch|lightning|\bpl\.|DataLoader")
_TRAINING_MENTION = re.compile(rb"\.backward\(|\.cuda\(")


@dataclass(frozen=True)
class SourceText:
    """A decoded file, or why it could not be read."""

    path: Path
    text: str | None
    error: str | None = None


def _is_virtualenv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def iter_source_files(paths: Iterable[Path], settings: Settings | None = None) -> Iterator[Path]:
    """Files named directly are always yielded; folders are walked, skipping junk."""
    settings = settings or Settings()
    for path in paths:
        if path.is_file():
            yield path
            continue
        for root, dirs, files in os.walk(path):
            root_path = Path(root)
            dirs[:] = sorted(
                d for d in dirs
                if d not in SKIP_DIRS
                and not d.endswith(".egg-info")
                and not _is_virtualenv(root_path / d)
                and not settings.is_excluded(str(root_path / d))
            )
            for name in sorted(files):
                if name.endswith(CHECKED_SUFFIXES):
                    file_path = root_path / name
                    if not settings.is_excluded(str(file_path)):
                        yield file_path


def mentions_torch(data: bytes) -> bool:
    """Cheap pre-filter for walked folders: a file that never mentions torch has no hazards."""
    return bool(_TORCH_MENTION.search(data))


def mentions_training(data: bytes) -> bool:
    """A file of a project that never names torch but drives training with what it is handed
    (``loss.backward()``, ``state['optimizer'].step()``, ``model.cuda()``)."""
    return bool(_TRAINING_MENTION.search(data))


def read_source(path: Path, require_torch: bool = False, training_will_do: bool = False) -> SourceText | None:
    """Decode a file as UTF-8 (with BOM), or explain why not; None when skipped as not torch code
    (``require_torch``; with ``training_will_do``, a file that drives training passes too)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return SourceText(path, None, f"cannot read: {exc.strerror or exc}")
    if len(data) > MAX_BYTES:
        return SourceText(path, None, f"skipped: {len(data) // (1024 * 1024)} MiB is over the 10 MiB limit")
    if require_torch and not mentions_torch(data) and not (training_will_do and mentions_training(data)):
        return None
    if b"\x00" in data[:8192]:
        return SourceText(path, None, "skipped: binary file (contains NUL bytes)")
    try:
        return SourceText(path, data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return SourceText(path, None, f"skipped: not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line})")
