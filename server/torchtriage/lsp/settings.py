"""Settings for the language server: client options over defaults, pyproject over both.

Client options come from ``initializationOptions`` and
``workspace/didChangeConfiguration`` (either the options themselves or under a
``"torchtriage"`` key) and are validated once by ``settings_from_mapping``:
problems become one ``window/showMessage`` and defaults, never a crash.
For each document the nearest ``pyproject.toml`` with ``[tool.torchtriage]``
is applied on top; it is re-read when its mtime changes or a watched-file
event names it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ..config import Settings, find_pyproject, load_settings, settings_from_mapping

log = logging.getLogger(__name__)

# Options that configure the server itself, not the analysis.
SERVER_KEYS = ("debounceMs", "interpreter")


@dataclass
class _Cached:
    pyproject: Path | None
    mtime: float
    settings: Settings


class SettingsManager:
    """Client settings plus a per-folder pyproject cache."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self._warn = warn
        self.client = Settings()
        self.debounce_ms: float | None = None  # None: adaptive
        self.interpreter: str | None = None  # Python that runs profiles; None: this server's
        self.profile_steps: int | None = None  # recorded steps per profile (--active); None: the CLI's adaptive window
        self.profile_timeout_s: float | None = None  # --timeout of a profile run; None: none
        self.run_folder: str | None = None  # where profile runs go; None: a temporary folder
        self._folders: dict[Path, _Cached] = {}
        self._reported: set[str] = set()

    def update_client(self, options: Any) -> None:
        """Validate client options (a mapping, or anything else -> defaults)."""
        if isinstance(options, Mapping) and isinstance(options.get("torchtriage"), Mapping):
            options = options["torchtriage"]
        if options is None:
            options = {}
        if not isinstance(options, Mapping):
            self._report([f"settings must be an object, got {type(options).__name__}"])
            options = {}
        options = dict(options)
        debounce = options.pop("debounceMs", None)
        errors: list[str] = []
        interpreter = options.pop("interpreter", None)
        if interpreter is not None and not isinstance(interpreter, str):
            errors.append(f"interpreter: expected a path to a Python executable, got {interpreter!r}")
            interpreter = None
        self.interpreter = interpreter or None
        steps = _number(options.pop("profileSteps", None), "profileSteps", 0, 1000, errors, integer=True)
        self.profile_steps = steps or None  # 0 (or none): automatic, the CLI's adaptive window
        self.profile_timeout_s = _number(options.pop("profileTimeout", None), "profileTimeout", 1, 86400, errors)
        run_folder = options.pop("runFolder", None)
        if run_folder is not None and not isinstance(run_folder, str):
            errors.append(f"runFolder: expected a folder path, got {run_folder!r}")
            run_folder = None
        self.run_folder = run_folder or None
        if debounce is not None:
            if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and 0 <= debounce <= 5000:
                self.debounce_ms = float(debounce)
            else:
                errors.append(f"debounceMs: expected a number of milliseconds 0-5000, got {debounce!r}")
        self._reported.clear()
        self.client, problems = settings_from_mapping(options)
        self._report(errors + problems)
        self._folders.clear()

    def invalidate(self, changed: Path | None = None) -> None:
        """Forget cached pyproject settings (all, or those read from ``changed``)."""
        if changed is None:
            self._folders.clear()
            return
        changed = changed.resolve()
        for folder, cached in list(self._folders.items()):
            if cached.pyproject is None or cached.pyproject == changed:
                del self._folders[folder]

    def for_path(self, path: Path | None) -> Settings:
        """Effective settings for a document on disk (client settings when not on disk)."""
        if path is None:
            return self.client
        folder = path.parent
        cached = self._folders.get(folder)
        if cached is not None and cached.pyproject is not None and _mtime(cached.pyproject) != cached.mtime:
            cached = None
        if cached is None:
            pyproject = find_pyproject(folder) if folder.exists() else None
            settings, problems = load_settings(folder, self.client) if pyproject else (self.client, [])
            self._report(problems)
            cached = _Cached(pyproject, _mtime(pyproject) if pyproject else 0.0, settings)
            self._folders[folder] = cached
        return cached.settings

    def _report(self, problems: list[str]) -> None:
        fresh = [p for p in problems if p not in self._reported]
        self._reported.update(fresh)
        if fresh:
            log.warning("settings: %s", "; ".join(fresh))
            self._warn("torchtriage settings: " + "; ".join(fresh) + " (defaults used for these)")


def _number(value: Any, name: str, low: float, high: float, errors: list[str], integer: bool = False) -> Any:
    """``value`` when it is a number in [low, high] (an int when ``integer``), else None with an error noted."""
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high
    if ok and (not integer or float(value).is_integer()):
        return int(value) if integer else float(value)
    errors.append(f"{name}: expected {'a whole number' if integer else 'a number'} from {low:g} to {high:g}, got {value!r}")
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return -1.0
