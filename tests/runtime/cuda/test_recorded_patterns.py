"""The pattern findings on profiled runs (``torchtriage profile``, the agent's records of the H100 runs kept in
``tests/data/runtime/cuda``): the rules whose data a profiled run has too.  No GPU needed.

tiny_ops steps ``Adam(foreach=False)``: the agent charges its optimizer line to ``_single_tensor_adam`` (TTR504);
device_moves loads its batches with ``num_workers=0`` (TTR303, on its ``for`` line); sync_every_step_v1 keeps the
GPU busy under half the step (TTR605); big_matmul, GPU-bound with fp32 matmuls, gets TTR602 and none of these.
"""

from __future__ import annotations

import pytest

from cuda_cases import line_of, recorded
from torchtriage.runtime.diagnosis.bottleneck import diagnose


def findings(case: str) -> tuple[dict[str, list], object, float]:
    profile, script, _ = recorded(case)
    out: dict[str, list] = {}
    for f in diagnose(profile).runtime_findings:
        out.setdefault(f.code, []).append(f)
    return out, script, profile.mean_step_us / 1000.0


def test_a_single_tensor_optimizer_in_a_profiled_run() -> None:
    found, script, step_ms = findings("tiny_ops")
    [single] = found["TTR504"]
    assert single.span.line == line_of(script, "optimizer.step()")
    assert single.extra["details"]["optimizer"] == "Adam" and single.extra["details"]["implementation"] == "_single_tensor_adam"
    assert 0 < single.extra["self_ms_per_step"] <= step_ms and single.severity.value == "warning"
    assert "TTR504" not in findings("sync_every_step")[0]  # Adam on CUDA: foreach by default


def test_a_loader_without_workers_in_a_profiled_run() -> None:
    found, script, step_ms = findings("device_moves")
    [loader] = found["TTR303"]
    assert loader.span.line == line_of(script, "for images, targets in train_loader:")
    assert loader.extra["details"]["in_process"] and 0 < loader.extra["self_ms_per_step"] <= step_ms


def test_the_gpu_busy_under_half_the_step_in_a_profiled_run() -> None:
    profile, _, _ = recorded("sync_every_step_v1")
    found, _, step_ms = findings("sync_every_step_v1")
    [under] = found["TTR605"]
    busy = profile.extra["gpu_busy_us"] / sum(s.duration_us for s in profile.steps)
    assert under.extra["details"]["gpu_busy_share"] == pytest.approx(busy, abs=1e-4) and busy < 0.5
    assert 0 < under.extra["self_ms_per_step"] <= step_ms


def test_a_gpu_bound_fp32_run_gets_tf32_advice_only() -> None:
    found, _, _ = findings("big_matmul")
    assert "TTR602" in found
    assert not {"TTR303", "TTR504", "TTR605", "TTR606", "TTR703"} & set(found)
