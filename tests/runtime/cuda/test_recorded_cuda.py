"""Profiles recorded on an H100 (tests/data/runtime/cuda/), rebuilt by this checkout's host code: CI checks
the CUDA paths on real GPU records without a GPU."""

from __future__ import annotations


import pytest

import cuda_cases
from cuda_cases import (BIG_MATMUL_GEMMS, cases, check_big_matmul, check_blocking_copies, check_eval_growth, check_graph_leak, check_sync_cost,
                        check_sync_lines, check_tiny_ops, clocks, recorded)


def test_at_least_four_real_gpu_cases_each_with_a_verdict():
    listed = cases()
    assert len(listed) >= 4
    for name, case in listed.items():
        report = cuda_cases.case_report(name)
        assert report["device"] == "cuda" and report["device_name"].startswith("NVIDIA"), name
        assert report["bottleneck"]["kind"] in ("data_loading", "host_sync", "python_overhead", "launch_overhead",
                                                "compute", "communication", "memory_growth", "none")
        profile, _, _ = recorded(name)
        assert cuda_cases.verdict(profile) == report["bottleneck"]["kind"] == case["verdict"], f"{name}: report.json is stale (bench/gpu/save_cases.py)"


def test_big_matmul_is_compute_bound_and_its_kernels_are_on_their_lines():
    profile, script, _ = recorded("big_matmul")
    check_big_matmul(profile, script)


def test_a_step_the_gpu_falls_behind_on_lasts_as_long_as_the_synchronised_clock_says():
    """The CPU's step ranges read 2.1 ms a step on the H100; the workload's synchronised clock 7.4 ms."""
    profile, _, _ = recorded("big_matmul")
    clock = clocks()["big_matmul"]["profiled"]["median_ms"]
    assert profile.extra["gpu_paced_steps"] >= len(profile.steps) // 2
    assert abs(cuda_cases.mean_step_ms(profile) - clock) <= 0.1 * clock


def test_every_step_launches_the_five_matrix_products_and_the_same_kernels():
    _, _, trace = recorded("big_matmul")
    assert trace is not None
    work = trace.device_work()
    launches = trace.launch_times()
    steps = trace.steps
    gemms_per_step = []
    for step in steps:
        gemms_per_step.append(sum(1 for k in trace.kernels() if "gemm" in k.name
                                  and step.start_us <= launches.get(k.args.get("correlation"), -1) < step.end_us))
    assert set(gemms_per_step) == {BIG_MATMUL_GEMMS}
    assert len({w.kernels for w in work.values()}) == 1
    profile, _, _ = recorded("big_matmul")
    assert profile.kernels_per_step == pytest.approx(next(iter(work.values())).kernels)


def test_sync_stalls_are_found_at_the_item_and_print_lines():
    profile, script, _ = recorded("sync_every_step")
    check_sync_lines(profile, script)


def test_a_sync_costs_the_time_the_gpu_sat_idle_not_the_time_the_cpu_waited():
    profile, _, _ = recorded("sync_every_step")
    check_sync_cost(profile)


def test_a_kept_graph_grows_gpu_memory_by_its_logits_targets_and_loss_every_step():
    profile, _, _ = recorded("graph_leak")
    check_graph_leak(profile)


def test_blocking_copies_sync_at_their_lines():
    profile, script, _ = recorded("device_moves")
    check_blocking_copies(profile, script)


def test_eval_loop_that_keeps_its_losses_grows_by_their_saved_tensors():
    profile, _, _ = recorded("eval_no_grad")
    check_eval_growth(profile)


def test_thousands_of_tiny_kernels_are_launch_overhead():
    profile, _, _ = recorded("tiny_ops")
    check_tiny_ops(profile)


def test_gpu_side_annotations_are_not_counted_as_kernels():
    profile, script, _ = recorded("big_matmul")
    names = {n for c in profile.lines for n in c.top_names}
    assert not any(n.startswith("ProfilerStep#") for n in names)
