"""Whether the built labextension is required (make test-jupyter) or optional (elsewhere)."""

from __future__ import annotations

import os

import pytest


def needs_labextension(ready: bool, reason: str) -> None:
    """Skip when the labextension (or its npm deps) is not built, unless `make test-jupyter` asked for it
    (TORCHTRIAGE_REQUIRE_LABEXTENSION=1): there, missing is a failure."""
    if ready:
        return
    if os.environ.get("TORCHTRIAGE_REQUIRE_LABEXTENSION") == "1":
        pytest.fail(reason)
    pytest.skip(reason)
