"""What kind of file is being checked, from its path."""

from __future__ import annotations

from pathlib import PurePath


def is_test_file(path: str) -> bool:
    """pytest-style test modules: ``test_*.py``, ``*_test.py``, ``conftest.py``."""
    name = PurePath(path).name
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
