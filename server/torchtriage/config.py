"""One typed settings schema for every host.

``[tool.torchtriage]`` in pyproject.toml, CLI flags, LSP initialization options
and Jupyter config all map onto :class:`Settings`.  Validation happens once, in
:func:`settings_from_mapping`, which never raises: bad values are reported as
messages and replaced by defaults.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Any, Iterable, Mapping

from .findings import Severity

DEVICE_CHOICES = ("auto", "cuda", "cpu")


@dataclass(frozen=True)
class Settings:
    """What to check and how: rule selection, severities and the device assumption."""

    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    severity: tuple[tuple[str, Severity], ...] = ()
    device: str = "auto"
    exclude: tuple[str, ...] = ()
    source: str | None = None  # the pyproject.toml these came from, if any

    def with_changes(self, **changes: Any) -> "Settings":
        return replace(self, **changes)

    def is_enabled(self, code: str, path: str | None = None) -> bool:
        """Whether rule ``code`` runs, for ``path`` when given (per-file ignores)."""
        selected = _matches_any(code, self.select + self.extend_select)
        if not selected or _matches_any(code, self.ignore):
            return False
        if path is not None:
            for pattern, codes in self.per_file_ignores:
                if _path_matches(path, pattern) and _matches_any(code, codes):
                    return False
        return True

    def severity_for(self, code: str, default: Severity) -> Severity:
        """The configured severity for ``code``, falling back to the rule's own."""
        for prefix, level in self.severity:
            if code.startswith(prefix):
                return level
        return default

    def is_excluded(self, path: str) -> bool:
        return any(_path_matches(path, pattern) for pattern in self.exclude)


def _matches_any(code: str, prefixes: Iterable[str]) -> bool:
    return any(prefix == "ALL" or code.startswith(prefix) for prefix in prefixes)


def _path_matches(path: str, pattern: str) -> bool:
    posix = PurePath(path).as_posix()
    return (
        fnmatch.fnmatch(posix, pattern)
        or fnmatch.fnmatch(posix, f"*/{pattern}")
        or fnmatch.fnmatch(PurePath(path).name, pattern)
    )


def _code_list(value: Any, key: str, errors: list[str]) -> tuple[str, ...] | None:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        errors.append(f"{key}: expected a list of rule codes, got {value!r}")
        return None
    return tuple(v.strip().upper() for v in value if v.strip())


def settings_from_mapping(
    data: Mapping[str, Any], base: Settings | None = None
) -> tuple[Settings, list[str]]:
    """Validate a mapping (pyproject table, LSP options) into Settings.

    Returns the settings and a list of human-readable problems; unknown or
    invalid keys are reported and leave the base value in place.
    """
    settings = base or Settings()
    errors: list[str] = []
    changes: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = raw_key.replace("_", "-")
        if key in ("select", "ignore", "extend-select", "exclude"):
            codes = _code_list(value, key, errors)
            if codes is not None:
                if key == "exclude":
                    codes = tuple(str(v) for v in value) if not isinstance(value, str) else (value,)
                changes[key.replace("-", "_")] = codes
        elif key == "per-file-ignores":
            if not isinstance(value, Mapping):
                errors.append(f"per-file-ignores: expected a table of glob = [codes], got {value!r}")
                continue
            entries = []
            for pattern, codes_value in value.items():
                codes = _code_list(codes_value, f"per-file-ignores.{pattern}", errors)
                if codes is not None:
                    entries.append((str(pattern), codes))
            changes["per_file_ignores"] = tuple(entries)
        elif key == "severity":
            if not isinstance(value, Mapping):
                errors.append(f"severity: expected a table of CODE = level, got {value!r}")
                continue
            levels = []
            for code, level in value.items():
                try:
                    levels.append((str(code).upper(), Severity(str(level).lower())))
                except ValueError:
                    errors.append(
                        f"severity.{code}: {level!r} is not one of error, warning, info"
                    )
            # Longest prefix first so TT101 beats TT1.
            changes["severity"] = tuple(sorted(levels, key=lambda item: -len(item[0])))
        elif key == "device":
            if value in DEVICE_CHOICES:
                changes["device"] = value
            else:
                errors.append(f"device: {value!r} is not one of {', '.join(DEVICE_CHOICES)}")
        else:
            errors.append(f"unknown setting {raw_key!r}")
    return settings.with_changes(**changes), errors


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has [tool.torchtriage]."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else list(start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
                data = tomllib.loads(text)
            except (OSError, UnicodeDecodeError):
                continue
            except tomllib.TOMLDecodeError:
                if "tool.torchtriage" in text:
                    return candidate  # ours but broken: load_settings reports why
                continue
            if "torchtriage" in data.get("tool", {}):
                return candidate
    return None


def load_settings(start: Path, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Settings from the nearest pyproject.toml with a [tool.torchtriage] table."""
    pyproject = find_pyproject(start)
    if pyproject is None:
        return base or Settings(), []
    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["torchtriage"]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError) as exc:
        return base or Settings(), [f"{pyproject}: {exc}"]
    if not isinstance(table, Mapping):
        return base or Settings(), [f"{pyproject}: [tool.torchtriage] must be a table"]
    settings, errors = settings_from_mapping(table, base)
    return settings.with_changes(source=str(pyproject)), [f"{pyproject}: {e}" for e in errors]


DEFAULT_SETTINGS = Settings()
__all__ = [
    "DEFAULT_SETTINGS",
    "DEVICE_CHOICES",
    "Settings",
    "find_pyproject",
    "load_settings",
    "settings_from_mapping",
]
