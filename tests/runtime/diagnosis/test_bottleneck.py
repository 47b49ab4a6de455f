"""Diagnosis logic on ProfileData built from explicit numbers: shares, bars, order, advice."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchtriage.runtime.diagnosis.bottleneck import (
    COMPUTE_BAR,
    CPU_OP_OVERHEAD_US,
    CUDA_LAUNCH_US,
    MANY_OPS,
    SHORT_OP_US,
    VERDICT_BARS,
    category_shares,
    choose_kind,
    diagnose,
    hotspots,
)
from torchtriage.runtime.results.profile_data import CATEGORIES, LineCost, OpCost, ProfileData, RunStatus, StepTiming

STEP_US = 10_000.0
BARS = dict(VERDICT_BARS)


def make_profile(shares: dict[str, float], steps: int = 10, device: str = "cpu", step_us: float = STEP_US, **kw) -> ProfileData:
    """A run of ``steps`` equal steps whose categories take ``shares`` of each step."""
    return ProfileData(
        script="/work/x/train.py",
        argv=[],
        cwd="/work/x",
        device=device,
        device_name=device,
        torch_version="2.13.0",
        python="3.11",
        step_detection="optimizer",
        steps=[StepTiming(i, i * step_us, (i + 1) * step_us) for i in range(steps)],
        category_us={c: s * step_us * steps for c, s in shares.items()},
        **kw,
    )


def test_shares_of_a_fully_attributed_step_are_the_input_shares() -> None:
    shares = category_shares(make_profile({"data_loading": 0.5, "compute": 0.3, "optimizer": 0.2}))
    assert shares["data_loading"] == pytest.approx(0.5)
    assert shares["optimizer"] == pytest.approx(0.2)
    assert shares["idle"] == pytest.approx(0.0)


def test_unaccounted_time_is_idle() -> None:
    shares = category_shares(make_profile({"compute": 0.6}))
    assert shares["idle"] == pytest.approx(0.4)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(CATEGORIES), st.floats(0, 3, allow_nan=False), min_size=1),
    st.floats(0, 5000),
    st.sampled_from(["cpu", "cuda"]),
    st.floats(0, 5000),
)
def test_shares_always_sum_to_one_and_stay_in_range(raw: dict, ops: float, device: str, kernels: float) -> None:
    # categories may overlap (sum > 1, as GPU kernels overlap CPU work) or leave gaps
    shares = category_shares(make_profile(raw, device=device, ops_per_step=ops, kernels_per_step=kernels))
    assert set(shares) == set(CATEGORIES)
    assert sum(shares.values()) == pytest.approx(1.0)
    assert all(0.0 <= s <= 1.0 for s in shares.values())


def test_no_steps_gives_empty_breakdown_and_none() -> None:
    p = make_profile({"compute": 1.0}, steps=0)
    d = diagnose(p)
    assert d.breakdown == {}
    assert d.bottleneck.kind == "none"
    assert "0 steps" in d.bottleneck.evidence[0].text


def test_failed_run_gives_none_with_the_status_message() -> None:
    p = make_profile({"data_loading": 0.9}, status=RunStatus("raised", "ValueError: boom"))
    d = diagnose(p)
    assert d.bottleneck.kind == "none"
    assert "ValueError: boom" in d.bottleneck.evidence[0].text


def test_data_loading_at_its_bar_wins_over_larger_compute() -> None:
    bar = BARS["data_loading"]
    d = diagnose(make_profile({"data_loading": bar, "compute": 1 - bar}))
    assert 1 - bar > bar  # compute is larger, yet the loader is investigated first
    assert d.bottleneck.kind == "data_loading"
    assert d.bottleneck.share == pytest.approx(bar)


def test_data_loading_just_below_its_bar_leaves_compute_as_verdict_and_loader_as_secondary() -> None:
    share = BARS["data_loading"] - 0.02
    d = diagnose(make_profile({"data_loading": share, "compute": 1 - share}))
    assert d.bottleneck.kind == "compute"
    assert "data_loading" in [v.kind for v in d.secondary]


def test_sync_bar_is_lower_than_launch_bar_and_order_is_data_sync_launch() -> None:
    order = [c for c, _ in VERDICT_BARS]
    assert order[:3] == ["data_loading", "host_sync", "launch_overhead"]
    d = diagnose(make_profile({"host_sync": BARS["host_sync"], "python_overhead": 0.5, "compute": 0.35}))
    assert d.bottleneck.kind == "host_sync"


@pytest.mark.parametrize("category", [c for c, _ in VERDICT_BARS])
def test_each_category_alone_at_its_bar_is_the_verdict(category: str) -> None:
    bar = BARS[category]
    d = diagnose(make_profile({category: bar, "idle": 1 - bar}))
    assert d.bottleneck.kind == category


def test_compute_needs_its_bar_else_none() -> None:
    assert choose_kind({"compute": COMPUTE_BAR, "idle": 1 - COMPUTE_BAR}, _flat_memory())[0] == "compute"
    below = COMPUTE_BAR - 0.05
    assert choose_kind({"compute": below, "idle": 1 - below}, _flat_memory())[0] == "none"


def test_optimizer_counts_towards_compute() -> None:
    half = COMPUTE_BAR / 2 + 0.01
    kind, share = choose_kind({"compute": half, "optimizer": half, "idle": 1 - 2 * half}, _flat_memory())
    assert kind == "compute" and share == pytest.approx(2 * half)


def _flat_memory():
    from torchtriage.runtime.diagnosis.bottleneck import MemoryTrend

    return MemoryTrend(0, 0.0, 0.0, False)


def test_many_short_cpu_ops_become_launch_overhead() -> None:
    # 0.9 of the step in ops; so many ops that the fixed per-op cost covers most of it
    ops = 0.9 * STEP_US / (CPU_OP_OVERHEAD_US * 1.2)
    d = diagnose(make_profile({"compute": 0.9, "idle": 0.1}, ops_per_step=ops))
    assert d.bottleneck.kind == "launch_overhead"
    assert d.breakdown["launch_overhead"] == pytest.approx(ops * CPU_OP_OVERHEAD_US / STEP_US)
    assert any("torch.compile" in r.action for r in d.bottleneck.recommendations)
    assert any(f"{ops:.0f} ops per step" in e.text for e in d.bottleneck.evidence)


def test_python_glue_between_many_short_ops_counts_as_launch_overhead() -> None:
    # 300-layer-MLP shape: many ops, short, Python between them (Module.__call__)
    ops = MANY_OPS * 2
    p = make_profile({"compute": 0.3, "python_overhead": 0.4, "optimizer": 0.1, "idle": 0.2}, ops_per_step=ops)
    assert 0.8 * STEP_US / ops <= SHORT_OP_US
    shares = category_shares(p)
    assert shares["python_overhead"] == 0.0
    assert shares["launch_overhead"] == pytest.approx(min(ops * CPU_OP_OVERHEAD_US / STEP_US, 0.3) + 0.4)
    assert diagnose(p).bottleneck.kind == "launch_overhead"


def test_a_python_loop_with_few_ops_stays_python_overhead() -> None:
    # per-sample Python augmentation in the step: lots of Python per op
    p = make_profile({"compute": 0.1, "python_overhead": 0.8, "idle": 0.1}, ops_per_step=20)
    assert category_shares(p)["python_overhead"] == pytest.approx(0.8)
    assert diagnose(p).bottleneck.kind == "python_overhead"


def test_many_long_ops_keep_their_python_overhead() -> None:
    ops = MANY_OPS * 2
    per_op = 0.9 * STEP_US / ops
    shares = {"compute": 0.5, "python_overhead": 0.4, "idle": 0.1}
    p = make_profile(shares, ops_per_step=ops)
    big = make_profile(shares, ops_per_step=ops, step_us=STEP_US * 100)  # same shares, ops 100x longer
    assert per_op <= SHORT_OP_US < per_op * 100
    assert category_shares(p)["python_overhead"] == 0.0
    assert category_shares(big)["python_overhead"] == pytest.approx(0.4)


def test_few_long_cpu_ops_stay_compute() -> None:
    d = diagnose(make_profile({"compute": 0.9, "idle": 0.1}, ops_per_step=20))
    assert d.bottleneck.kind == "compute"
    assert d.breakdown["launch_overhead"] < 0.05


def test_measured_launch_overhead_is_not_rederived() -> None:
    p = make_profile({"compute": 0.7, "launch_overhead": 0.1, "idle": 0.2}, ops_per_step=1e6)
    assert category_shares(p)["launch_overhead"] == pytest.approx(0.1)


def test_cuda_launches_slower_than_kernels_turn_gpu_idle_into_launch_overhead() -> None:
    kernels = 500  # 500 * 10 us = 5 ms of launching for 1 ms of kernels
    p = make_profile({"compute": 0.1, "idle": 0.9}, device="cuda", kernels_per_step=kernels)
    shares = category_shares(p)
    assert shares["launch_overhead"] == pytest.approx((kernels * CUDA_LAUNCH_US - 0.1 * STEP_US) / STEP_US)
    assert diagnose(p).bottleneck.kind == "launch_overhead"
    few = make_profile({"compute": 0.1, "idle": 0.9}, device="cuda", kernels_per_step=20)
    assert category_shares(few)["launch_overhead"] == 0.0


def test_recommendations_depend_on_device_and_workers() -> None:
    cpu = diagnose(make_profile({"data_loading": 0.6, "compute": 0.4}, loader_workers=0, extra={"physical_cores": 16}))
    cuda = diagnose(make_profile({"data_loading": 0.6, "compute": 0.4}, device="cuda", loader_workers=0))
    cpu_text = " ".join(r.action + r.example for r in cpu.bottleneck.recommendations)
    cuda_text = " ".join(r.action + r.example for r in cuda.bottleneck.recommendations)
    assert "num_workers=8" in cpu_text  # half the physical cores
    assert "pin_memory" in cuda_text and "pin_memory" not in cpu_text
    some = diagnose(make_profile({"data_loading": 0.6, "compute": 0.4}, loader_workers=4, extra={"physical_cores": 16}))
    assert "Raise num_workers from 4 to 8" in some.bottleneck.recommendations[0].action


def test_compute_advice_is_autocast_on_cuda_and_threads_on_cpu() -> None:
    cuda = diagnose(make_profile({"compute": 0.9}, device="cuda"))
    attention = diagnose(make_profile({"compute": 0.9}, device="cuda", ops=[OpCost("aten::_softmax", calls=10, self_us=5.0)]))
    cpu = diagnose(make_profile({"compute": 0.9}, extra={"physical_cores": 6}))
    assert cuda.bottleneck.recommendations[0].action == "Train in bf16 autocast"  # the GPU's busy share is not known here
    assert not any("scaled_dot_product_attention" in r.action for r in cuda.bottleneck.recommendations)  # no attention op ran
    assert any("scaled_dot_product_attention" in r.action for r in attention.bottleneck.recommendations)
    assert any("torch.set_num_threads(6)" in r.action for r in cpu.bottleneck.recommendations)
    assert any("channels_last" in r.action for r in cpu.bottleneck.recommendations)


def test_compute_on_a_mostly_idle_gpu_is_the_hosts_time() -> None:
    idle = diagnose(make_profile({"compute": 0.9}, device="cuda", extra={"gpu_busy_us": 0.3 * STEP_US * 10}))
    busy = diagnose(make_profile({"compute": 0.9}, device="cuda", extra={"gpu_busy_us": 0.8 * STEP_US * 10}))
    actions = [r.action for r in idle.bottleneck.recommendations]
    assert actions[0].startswith("Find what the host runs while the GPU idles") and "Train in bf16 autocast" in actions[2:]
    assert any("busy only 30% of the step" in e.text for e in idle.bottleneck.evidence)
    assert busy.bottleneck.recommendations[0].action == "Train in bf16 autocast"
    assert not any("busy only" in e.text for e in busy.bottleneck.evidence)


def test_evidence_names_the_top_line_of_the_verdict_category() -> None:
    lines = [
        LineCost("/work/x/data.py", 17, "data_loading", 0.5 * STEP_US * 10, top_names=["time.sleep"]),
        LineCost("/work/x/train.py", 40, "compute", 0.3 * STEP_US * 10),
    ]
    d = diagnose(make_profile({"data_loading": 0.55, "compute": 0.45}, lines=lines))
    located = [(e.path, e.line) for e in d.bottleneck.evidence if e.path]
    assert located[0] == ("/work/x/data.py", 17)
    assert "data.py:17" in d.bottleneck.recommendations[-1].action


def test_hotspots_merge_categories_per_line_and_sort_by_time() -> None:
    lines = [
        LineCost("/a.py", 5, "compute", 300.0, top_names=["aten::mm"]),
        LineCost("/a.py", 5, "host_sync", 100.0, top_names=["aten::item"]),
        LineCost("/a.py", 9, "python_overhead", 350.0),
    ]
    spots = hotspots(make_profile({"compute": 1.0}, steps=2, lines=lines))
    assert [(h.path, h.line) for h in spots] == [("/a.py", 5), ("/a.py", 9)]
    assert spots[0].self_us_per_step == pytest.approx(200.0)
    assert spots[0].category == "compute"
    assert spots[0].top_names == ["aten::mm", "aten::item"]
    assert spots[0].share == pytest.approx(400.0 / (2 * STEP_US))
