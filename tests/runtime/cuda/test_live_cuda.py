"""The recorded-case checks on fresh runs, on a machine with a CUDA device (skipped elsewhere):
``python -m pytest -m cuda tests/runtime/cuda`` on a GPU machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cuda_cases import check_big_matmul, check_blocking_copies, check_eval_growth, check_graph_leak, check_sync_cost, check_sync_lines, check_tiny_ops
from torchtriage.runtime.attribution.lines import build_profile

pytestmark = [pytest.mark.cuda, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def profiled(tmp_path: Path, example: str, steps: int):
    """Profile EXAMPLE on the GPU (into $TORCHTRIAGE_LIVE_OUT/EXAMPLE when set, so a GPU session keeps the runs)."""
    kept = os.environ.get("TORCHTRIAGE_LIVE_OUT")
    out = Path(kept) / example if kept else tmp_path / example
    subprocess.run([sys.executable, "-m", "torchtriage", "profile", "--device", "cuda", "--quiet", "--out", str(out),
                    str(EXAMPLES / f"{example}.py"), "--", "--steps", str(steps)], check=True, timeout=300)
    raw = json.loads((out / "agent.json").read_text(encoding="utf-8"))
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["device"] == "cuda" and report["device_name"].startswith("NVIDIA")
    return build_profile(raw, extra={"trace": str(out / "trace.json.gz")}), EXAMPLES / f"{example}.py", report


def test_big_matmul(tmp_path):
    profile, script, report = profiled(tmp_path, "big_matmul", 40)
    check_big_matmul(profile, script)
    assert report["bottleneck"]["kind"] == "compute"


def test_sync_every_step(tmp_path):
    profile, script, report = profiled(tmp_path, "sync_every_step", 60)
    check_sync_lines(profile, script)
    check_sync_cost(profile)  # the verdict, or a secondary one: it depends on the GPU's speed


def test_graph_leak(tmp_path):
    profile, _, report = profiled(tmp_path, "graph_leak", 40)
    check_graph_leak(profile)
    assert report["bottleneck"]["kind"] == "memory_growth"


def test_device_moves(tmp_path):
    profile, script, _ = profiled(tmp_path, "device_moves", 40)
    check_blocking_copies(profile, script)


def test_eval_no_grad(tmp_path):
    profile, _, _ = profiled(tmp_path, "eval_no_grad", 30)
    check_eval_growth(profile)


def test_tiny_ops(tmp_path):
    profile, _, report = profiled(tmp_path, "tiny_ops", 30)
    check_tiny_ops(profile)
    assert report["bottleneck"]["kind"] == "launch_overhead"
