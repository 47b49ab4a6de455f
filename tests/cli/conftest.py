"""Fixtures for driving the real CLI as a subprocess (``python -m torchtriage ...``)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from cli_helpers import Result, runner


@pytest.fixture
def tt(tmp_path: Path) -> Callable[..., Result]:
    """Run ``torchtriage`` with arguments in the test's temp folder."""
    return runner(tmp_path)
