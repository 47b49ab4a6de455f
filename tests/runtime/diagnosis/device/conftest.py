"""The CUDA profile the device-finding tests share: the agent.json cuda_trace.py builds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import cuda_trace


@pytest.fixture
def raw(tmp_path: Path) -> dict[str, Any]:
    cuda_trace.write_script(tmp_path)
    return cuda_trace.agent_json(tmp_path)
