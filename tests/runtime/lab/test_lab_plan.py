"""The lab's plan (--modes), its statistics (spread, measurable change) and its reading, on numbers given here."""

from __future__ import annotations

from typing import Any

import pytest

from torchtriage.runtime.lab.measure import FASTER, SAME, SLOWER, change, quartiles, step_stats
from torchtriage.runtime.lab.plan import Configuration, LabSettings, cpu_skip_reason, parse_configuration, parse_modes
from torchtriage.runtime.lab.reading import build_reading


def test_default_modes_are_the_three_configurations_with_fp32_first() -> None:
    assert [c.name for c in parse_modes("fp32,bf16,bf16+compile")] == ["fp32", "bf16", "bf16+compile"]
    assert [c.describe() for c in parse_modes("fp32,bf16,bf16+compile")] == [
        "fp32 (as written)", "bf16 autocast", "bf16 autocast + torch.compile"]


@pytest.mark.parametrize(
    ("text", "name", "precision", "compile_mode"),
    [
        ("compile", "bf16+compile", "bf16", "default"),
        ("reduce-overhead", "bf16+reduce-overhead", "bf16", "reduce-overhead"),
        ("max-autotune", "bf16+max-autotune", "bf16", "max-autotune"),
        (" FP16 ", "fp16", "fp16", None),
        ("fp32+compile", "fp32+compile", "fp32", "default"),
        ("fp16+max-autotune", "fp16+max-autotune", "fp16", "max-autotune"),
    ],
)
def test_a_mode_names_a_precision_and_a_compile_mode(text: str, name: str, precision: str, compile_mode: str | None) -> None:
    configuration = parse_configuration(text)
    assert (configuration.name, configuration.precision, configuration.compile_mode) == (name, precision, compile_mode)
    assert configuration.grad_scaler is (precision == "fp16")


def test_fp32_is_always_run_first_and_each_mode_once() -> None:
    assert [c.name for c in parse_modes("compile,bf16,bf16+compile,,fp32")] == ["fp32", "bf16+compile", "bf16"]


@pytest.mark.parametrize("text", ["int8", "bf16+fast", "bf16+compile+max-autotune", "fp32-compile"])
def test_unknown_modes_are_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match="unknown mode .*precision \\(fp32, bf16, fp16\\).*\\+compile"):
        parse_configuration(text)


def test_a_cpu_skips_fp16_and_cuda_graphs_but_not_bf16_or_max_autotune() -> None:
    assert "GPU recipe" in (cpu_skip_reason(Configuration("fp16")) or "")
    assert "CUDA graphs" in (cpu_skip_reason(Configuration("bf16", "reduce-overhead")) or "")
    for configuration in (Configuration("bf16"), Configuration("bf16", "default"), Configuration("bf16", "max-autotune")):
        assert cpu_skip_reason(configuration) is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (LabSettings(steps=1), "--steps"),
        (LabSettings(warmup=0), "--warmup"),
        (LabSettings(repeat=0), "--repeat"),
        (LabSettings(loss_tolerance=0), "--loss-tolerance"),
    ],
)
def test_settings_out_of_range_are_refused(settings: LabSettings, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        settings.validate()


def test_quartiles_and_the_spread_of_one_run() -> None:
    assert quartiles([4.0]) == (4.0, 4.0, 4.0)
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 3.0, 4.0)
    stats = step_stats([[1.0, 2.0, 3.0, 4.0, 5.0]])
    assert stats is not None
    assert (stats.median_ms, stats.q1_ms, stats.q3_ms, stats.low_ms, stats.high_ms) == (3.0, 2.0, 4.0, 2.0, 4.0)
    assert stats.iqr_ms == 2.0 and stats.steps_per_s == pytest.approx(1000 / 3)
    assert step_stats([[], []]) is None


def test_repeats_widen_the_spread_to_every_runs_median() -> None:
    """Two runs whose medians differ more than the pooled quartiles: the spread takes both medians in."""
    stats = step_stats([[10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0], [14.0, 14.0, 14.0]])
    assert stats is not None
    assert (stats.q1_ms, stats.q3_ms) == (10.0, 13.0)
    assert stats.run_medians_ms == (10.0, 14.0) and (stats.low_ms, stats.high_ms) == (10.0, 14.0)


def test_a_change_counts_only_beyond_both_spreads() -> None:
    base = step_stats([[9.0, 10.0, 11.0]])
    overlapping = step_stats([[8.0, 9.0, 10.5]])
    faster = step_stats([[5.0, 6.0, 7.0]])
    slower = step_stats([[13.0, 14.0, 15.0]])
    assert base and overlapping and faster and slower
    assert change(base, overlapping) == SAME
    assert change(base, faster) == FASTER
    assert change(base, slower) == SLOWER


def row(name: str, median: float, spread: float, compile_s: float | None = None, base: tuple[float, float] = (100, 2)) -> dict[str, Any]:
    """A measured lab.json row with only what the reading reads (compared with an fp32 row of ``base`` median and spread)."""
    precision, _, compiled = name.partition("+")
    fp32 = step_stats([[base[0] - base[1], base[0], base[0] + base[1]]])
    own = step_stats([[median - spread, median, median + spread]])
    assert fp32 and own
    return {
        "name": name, "precision": precision, "compile_mode": "default" if compiled else None, "status": "measured", "reason": None,
        "steps_measured": 30, "speedup_vs_fp32": fp32.median_ms / median, "change_vs_fp32": change(fp32, own),
        "compile_s": compile_s, "graph_breaks": 0, "recompiles": 0,
        "step_time_ms": {"median": median, "q1": own.q1_ms, "q3": own.q3_ms, "min": median - spread,
                         "max": median + spread, "low": own.low_ms, "high": own.high_ms, "run_medians": [median]},
    }


def keys(reading: dict[str, Any]) -> list[str]:
    return [line["key"] for line in reading["lines"]]


def test_reading_a_small_precision_gain_says_precision_is_not_the_bottleneck() -> None:
    reading = build_reading([row("fp32", 100, 2), row("bf16", 90, 2), row("bf16+compile", 88, 2, 3.0)])
    assert reading["precision"]["size"] == "small" and reading["compile"]["size"] == "none"
    assert keys(reading) == ["precision_small", "compile_small", "fastest"] and reading["verdict"] == "neither_helps"
    assert reading["fastest"] == "bf16+compile" and reading["lines"][2]["text"] == "Fastest here: bf16+compile (88.00 ms/step, 1.14× fp32)."
    text = reading["lines"][0]["text"]
    assert "under 20 %" in text and "precision is not the bottleneck" in text and "torchtriage profile" in text
    assert "already fused or the step is not launch/compute bound" in reading["lines"][1]["text"]


def test_reading_two_large_steps_says_take_both() -> None:
    reading = build_reading([row("fp32", 100, 2), row("bf16", 50, 2), row("bf16+compile", 25, 1, 4.0)])
    assert keys(reading) == ["precision_large", "compile_large", "take_both", "fastest"]
    assert reading["verdict"] == "take_both" and "4.00× over fp32" in reading["lines"][2]["text"]
    assert reading["fastest"] == "bf16+compile"


def test_reading_overlapping_spreads_is_no_measurable_change_even_for_a_big_median_gap() -> None:
    reading = build_reading([row("fp32", 100, 30, base=(100, 30)), row("bf16", 75, 30, base=(100, 30))])
    assert reading["precision"]["change"] == "no_measurable_change" and reading["precision"]["size"] == "none"
    assert keys(reading) == ["precision_no_change", "fastest"] and "no measurable change" in reading["lines"][0]["text"]
    assert reading["fastest"] == "fp32" and reading["lines"][1]["text"] == "No configuration is measurably faster than fp32 as written (100.00 ms/step)."


def test_reading_a_slower_low_precision_names_the_missing_fast_path() -> None:
    reading = build_reading([row("fp32", 2, 0.1, base=(2, 0.1)), row("bf16", 10, 0.5, base=(2, 0.1)), row("bf16+compile", 4, 0.2, 1.0, base=(2, 0.1))])
    assert keys(reading)[:2] == ["precision_slower", "compile_large"] and reading["verdict"] == "take_compile"
    assert "no fast path for bf16" in reading["lines"][0]["text"]
    assert reading["lines"][-1] == {"key": "fastest", "text": "Fastest here: fp32 as written (2.00 ms/step)."}


def test_reading_without_numbers_for_a_row_says_why() -> None:
    failed = dict(row("bf16+compile", 1, 0), status="failed", reason="compile_failed", step_time_ms=None)
    reading = build_reading([row("fp32", 100, 2), row("bf16", 50, 2), failed])
    assert reading["compile"] is None and reading["verdict"] == "take_low_precision"
    assert reading["lines"][1] == {"key": "compile_unknown", "text": "bf16 → bf16+compile: not compared (bf16+compile failed: compile_failed)."}
