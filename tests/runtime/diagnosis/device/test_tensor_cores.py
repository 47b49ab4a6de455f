"""Tensor Cores on a CUDA profile built in the tests (cuda_trace.py): shapes they cannot tile (TTR601),
fp32 matmuls with TF32 off on Ampere or newer (TTR602)."""

from __future__ import annotations

from typing import Any

import pytest

from torchtriage.runtime.attribution.lines import build_profile

from device_support import facts, findings


def test_the_agent_records_shapes_with_their_kernel_time(raw: dict[str, Any]) -> None:
    profile = build_profile(raw)
    by_op = {s.op: s for s in profile.shapes}
    addmm, mm = by_op["aten::addmm"], by_op["aten::mm"]
    assert (addmm.dtype, addmm.dims, addmm.line, addmm.calls) == ("bfloat16", [[64, 1000], [1000, 30522]], 10, 3)
    assert addmm.gpu_us == pytest.approx(3 * 2000) and mm.gpu_us == pytest.approx(3 * 1000)
    assert (mm.dtype, mm.dims, mm.line) == ("float32", [[64, 512], [512, 512]], 11)
    assert profile.device_facts is not None and profile.device_facts.capability == (8, 0)


def test_misaligned_bf16_matmul_is_named_with_its_shape_cost_and_padding(raw: dict[str, Any]) -> None:
    [f] = findings(build_profile(raw))["TTR601"]
    assert f.span.line == 10 and f.name == "runtime-tensor-core-shape"
    assert "64x1000 @ 1000x30522 (bfloat16)" in f.message and "N=30522 is not a multiple of 8" in f.message
    assert "M=" not in f.message and "K=" not in f.message  # 64 and 1000 are multiples of 8
    assert f.extra["self_ms_per_step"] == pytest.approx(2.0)
    assert f.extra["share"] == pytest.approx(2.0 / 8.5, rel=1e-3)
    assert "N 30522 -> 30528" in f.extra["recommendations"][0]["action"]


def test_fp32_matmuls_with_tf32_off_on_ampere(raw: dict[str, Any]) -> None:
    [f] = findings(build_profile(raw))["TTR602"]
    assert f.span.line == 11 and "1.00 ms of GPU time per step" in f.message and "compute capability 8.0" in f.message
    assert "set_float32_matmul_precision('high')" in f.extra["recommendations"][0]["action"]
    # TF32 allowed: no TTR602, and 64x512 @ 512x512 is aligned for TF32 (multiples of 4)
    tf32 = findings(build_profile(facts(raw, float32_matmul_precision="high", allow_tf32=True)))
    assert "TTR602" not in tf32 and [f.span.line for f in tf32["TTR601"]] == [10]
    # a pre-Ampere GPU (7.0) has no TF32: nothing to switch on
    assert "TTR602" not in findings(build_profile(facts(raw, capability_major=7)))
