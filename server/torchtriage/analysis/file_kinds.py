"""What kind of file is being checked, from its path (and, when given, its source)."""

from __future__ import annotations

import re
from pathlib import PurePath

# What a test module holds: a test function, a TestCase, or the test framework imported.
_TEST_CONTENT = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+test_\w*[ \t]*\(|^[ \t]*class[ \t]+\w+\(.*TestCase.*\)[ \t]*:"
                           r"|^[ \t]*(?:import|from)[ \t]+(?:pytest|unittest)\b", re.M)
_TRAINS = re.compile(r"\bbackward\(")  # what a training script does and a test-named evaluation script does not
_TEST_FOLDERS = frozenset({"test", "tests"})


def is_test_file(path: str, source: str | None = None) -> bool:
    """pytest-style test modules: ``conftest.py``, and ``test_*.py`` / ``*_test.py`` that hold tests.

    With ``source``, a file named like a test that holds no test function, TestCase or test framework
    import, and trains (calls ``backward``), is not one: research code names its training scripts
    ``pmnist_test.py`` (the experiment on permuted MNIST).  One that does not train stays out
    (``test_net.py``, a standalone evaluation of the trained network, is no part of training).
    In a ``test/`` or ``tests/`` folder a test-named file is a test even when it trains: a smoke
    script that runs a model a few steps on random inputs to see that it learns."""
    pure = PurePath(path)
    name = pure.name
    if name == "conftest.py":
        return True
    if not (name.startswith("test_") or name.endswith("_test.py")):
        return False
    if _TEST_FOLDERS.intersection(part.lower() for part in pure.parts[:-1]):
        return True
    return source is None or _TEST_CONTENT.search(source) is not None or _TRAINS.search(source) is None
