"""The rule registry: every ``Rule`` subclass defined in a module of this package.

Each public module (``ttNNN_name.py``, one rule each) is imported to find them.  A module
whose name starts with ``_`` is a helper and never imported as a rule: ``_ttNNN_*.py``
serves rule TTNNN alone, the other ``_*.py`` modules are shared by several rules.  What a
rule may read of the module it checks (:class:`.base.RuleContext`) and the memo contract
for results it keeps on syntax nodes are written in :mod:`.base`.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from functools import lru_cache
from typing import Iterable

from .base import Invalid, Report, Rule, Valid


def import_rule_modules(package: str, path: Iterable[str]) -> list[str]:
    """Import every public module of a rule package; a module that fails is skipped.

    Returns one message per failed module (also issued as a RuntimeWarning), so
    one broken rule file costs its own rules, not the whole analyzer.
    """
    problems = []
    for info in pkgutil.iter_modules(list(path)):
        if info.name == "base" or info.name.startswith("_"):
            continue
        try:
            importlib.import_module(f"{package}.{info.name}")
        except Exception as exc:  # noqa: BLE001 - any import-time error of one rule file
            message = f"torchtriage: rule module {info.name} failed to import and is skipped: {type(exc).__name__}: {exc}"
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            problems.append(message)
    return problems


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule, sorted by code; modules are discovered, not listed by hand."""
    import_rule_modules(__name__, __path__)
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


__all__ = ["Invalid", "Report", "Rule", "Valid", "all_rules", "import_rule_modules", "rule_by_code"]
