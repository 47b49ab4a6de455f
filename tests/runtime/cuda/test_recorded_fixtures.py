"""The runtime-findings fixtures, the %%torchtriage magic and sync_every_step as they ran on an H200
(tests/data/runtime/cuda/), rebuilt by this checkout's host code and checked as the live tests check fresh runs."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from cuda_cases import case_report, cases, check_sync_cost, check_sync_lines, line_of, recorded
from fixture_checks import CHECKS
from torchtriage.runtime.profiling.finish import write_outputs


@pytest.mark.parametrize("fixture", sorted(CHECKS))
def test_fixture_as_recorded_on_the_h200(fixture: str) -> None:
    case = cases()[fixture]
    assert case["device"] == "cuda" and case["device_name"] == "NVIDIA H200" and case["source"] == "tests/data/runtime/gpu"
    profile, script, _ = recorded(fixture)
    with tempfile.TemporaryDirectory() as scratch:
        report = write_outputs(profile, Path(scratch))
    assert report["bottleneck"]["kind"] == case["verdict"]
    CHECKS[fixture](report, profile, script)


def test_fp16_autocast_runs_on_the_tensor_cores_and_is_no_dtype_churn() -> None:
    """On the H200 fp16 autocast's GEMMs were cuBLAS nvjet kernels, once read as "no Tensor Cores" (TTR606), and
    autocast's mixed-dtype aten::linear inputs as churn (TTR503)."""
    profile, _, _ = recorded("grad_scaler_fp16")
    with tempfile.TemporaryDirectory() as scratch:
        report = write_outputs(profile, Path(scratch))
    codes = {f["code"] for f in report["runtime_findings"]}
    assert not codes & {"TTR606", "TTR503"}, codes
    assert report["kernels"]["tensor_core_share"] > 0
    assert any(k["tensor_cores"] and k["name"].startswith("nvjet") for k in report["kernels"]["rows"])


def test_sync_every_step_on_the_h200_finds_the_syncs_and_costs_them_below_the_verdict_bar() -> None:
    profile, script, _ = recorded("sync_every_step_h200")
    check_sync_lines(profile, script)
    check_sync_cost(profile)  # 14 % of the step: a secondary verdict on this GPU, the verdict on the H100


def test_the_magic_profiled_a_cuda_cell_and_linked_its_print_of_a_synced_value() -> None:
    report = case_report("magic_cell")
    assert report["device"] == "cuda" and report["device_name"] == "NVIDIA H200"
    assert report["status"]["status"] == "stopped_after_window" and report["steps_profiled"] >= 3
    profile, script, _ = recorded("magic_cell")
    printed = line_of(script, 'print(f"step')
    assert any(p.line == printed and p.kind == "stream_sync" for p in profile.sync_points)
    assert any(f["code"] == "TT102" and f["line"] == printed for f in report["static_findings"])
