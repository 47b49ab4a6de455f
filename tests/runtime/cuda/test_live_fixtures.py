"""The runtime-findings fixtures' CUDA versions profiled on a CUDA device (skipped elsewhere), each checked as its
recorded run is in CI: ``python -m pytest -m cuda tests/runtime/cuda`` on a GPU machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fixture_checks import CHECKS, FIXTURES
from torchtriage.runtime.attribution.lines import build_profile

pytestmark = [pytest.mark.cuda, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.mark.parametrize("fixture", sorted(CHECKS))
def test_fixture_on_the_gpu(tmp_path: Path, fixture: str) -> None:
    kept = os.environ.get("TORCHTRIAGE_LIVE_OUT")
    out = Path(kept) / fixture if kept else tmp_path / fixture
    script = FIXTURES / f"{fixture}.py"
    subprocess.run([sys.executable, "-m", "torchtriage", "profile", "--device", "cuda", "--quiet", "--out", str(out),
                    str(script), "--", "--steps", "40"], check=True, timeout=300)
    raw = json.loads((out / "agent.json").read_text(encoding="utf-8"))
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["device"] == "cuda" and report["device_name"].startswith("NVIDIA")
    CHECKS[fixture](report, build_profile(raw, extra={"trace": str(out / "trace.json.gz")}), script)
