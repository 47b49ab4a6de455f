"""The rule registry: every ``Rule`` subclass defined in a module of this package."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from .base import Invalid, Report, Rule, Valid


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule, sorted by code; modules are discovered, not listed by hand."""
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    found: dict[str, type[Rule]] = {}
    stack = list(Rule.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if getattr(cls, "code", None):
            if cls.code in found and found[cls.code] is not cls:
                raise RuntimeError(f"duplicate rule code {cls.code}: {found[cls.code]} and {cls}")
            found[cls.code] = cls
    return tuple(found[code] for code in sorted(found))


def rule_by_code(code: str) -> type[Rule] | None:
    code = code.upper()
    for rule in all_rules():
        if rule.code == code or rule.name == code.lower():
            return rule
    return None


__all__ = ["Invalid", "Report", "Rule", "Valid", "all_rules", "rule_by_code"]
