"""Verdicts the recorded steps agree on: per-step spread, withheld secondary verdicts, the loader's prefetch rhythm."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchtriage.runtime.diagnosis.bottleneck import CPU_OP_OVERHEAD_US, category_shares, diagnose, step_shares
from torchtriage.runtime.results.profile_data import CATEGORIES, ProfileData, StepTiming
from torchtriage.runtime.report.writer import build_report, load_schema
from torchtriage.runtime.diagnosis.stability import loader_pattern, spread

VALIDATOR = jsonschema.Draft202012Validator(load_schema())


def profile_of(steps: list[dict[str, float]], **kw) -> ProfileData:
    """A run whose step i takes ``sum(steps[i].values())`` ms, split as given (ms per category)."""
    timings, per_step, totals, t = [], [], dict.fromkeys(CATEGORIES, 0.0), 0.0
    for i, ms in enumerate(steps):
        duration = sum(ms.values()) * 1000
        timings.append(StepTiming(i, t, t + duration))
        t += duration
        us = {c: ms.get(c, 0.0) * 1000 for c in CATEGORIES}
        per_step.append(us)
        for c in CATEGORIES:
            totals[c] += us[c]
    return ProfileData(
        "/w/train.py", [], "/w", "cpu", "cpu", "2.13", "3.11", "optimizer",
        steps=timings, category_us=totals, step_category_us=per_step, **kw,
    )


# One slow step whose Python overhead makes 20 % of the mean, four steps with none.
NOISY = [{"compute": 10.0}] * 4 + [{"compute": 120.0, "python_overhead": 60.0}]
STEADY = [{"compute": 8.0, "python_overhead": 2.0}] * 5


def test_a_secondary_verdict_only_the_mean_supports_is_withheld_with_the_numbers() -> None:
    p = profile_of(NOISY)
    assert category_shares(p)["python_overhead"] > 0.25
    d = diagnose(p)
    assert d.bottleneck.kind == "compute"
    assert [v.kind for v in d.secondary] == []
    [withheld] = d.withheld
    assert (withheld.kind, withheld.steps_at_bar, withheld.steps) == ("python_overhead", 1, 5)
    assert "1 of 5 steps" in withheld.reason and "10\u2013180 ms" in withheld.reason and "too noisy to call" in withheld.reason


def test_a_secondary_verdict_present_in_every_step_is_called() -> None:
    d = diagnose(profile_of(STEADY))
    assert [v.kind for v in d.secondary] == ["python_overhead"]
    assert d.withheld == []


def test_few_steps_leave_the_mean_to_decide() -> None:
    d = diagnose(profile_of([{"compute": 10.0}, {"compute": 120.0, "python_overhead": 30.0}]))
    assert [v.kind for v in d.secondary] == ["python_overhead"] and d.withheld == []


def test_profiles_without_per_step_times_keep_the_mean_rule() -> None:
    p = profile_of(NOISY)
    p.step_category_us = []
    assert step_shares(p) == [] and [v.kind for v in diagnose(p).secondary] == ["python_overhead"]


def test_breakdown_spread_is_in_the_report_and_valid() -> None:
    p = profile_of(NOISY)
    report = build_report(p, diagnose(p))
    VALIDATOR.validate(report)
    python = report["breakdown_spread"]["python_overhead"]
    assert python["min"] == 0.0 and python["median"] == 0.0 and python["max"] == pytest.approx(60 / 180, abs=1e-4)
    assert report["withheld_verdicts"][0]["kind"] == "python_overhead"


@given(st.lists(st.dictionaries(st.sampled_from(CATEGORIES), st.floats(0.0, 500.0), min_size=1), min_size=1, max_size=8))
def test_spread_is_ordered_and_within_range(steps: list[dict[str, float]]) -> None:
    p = profile_of([s if sum(s.values()) > 0 else {"compute": 1.0} for s in steps])
    for q in spread(step_shares(p)).values():
        assert 0.0 <= q["min"] <= q["q1"] <= q["median"] <= q["q3"] <= q["max"] <= 1.0


# Two workers, each ~600 ms a batch: every second step waits ~300 ms, the others find a batch ready.
ALTERNATING = [
    {"data_loading": 290.0, "compute": 10.0} if i % 2 else {"data_loading": 0.5, "compute": 12.0} for i in range(6)
]


def test_alternating_steps_with_workers_are_explained_by_prefetch() -> None:
    p = profile_of(ALTERNATING, loader_workers=2, extra={"physical_cores": 8})
    pattern = loader_pattern(p)
    assert pattern is not None and pattern.every_nth
    assert len(pattern.waited) == 3 and len(pattern.prefetched) == 3
    d = diagnose(p)
    assert d.bottleneck.kind == "data_loading"
    text = " ".join(e.text for e in d.bottleneck.evidence)
    assert "every second step waits for a batch while the others find one prefetched" in text
    assert "3 of 6 steps waited for a batch (300 ms, 290 ms of it waiting)" in text
    assert "12\u201313 ms" in text or "12 ms" in text


def test_no_prefetch_story_without_workers_or_when_slow_steps_do_not_wait() -> None:
    assert loader_pattern(profile_of(ALTERNATING, loader_workers=0)) is None
    slow_compute = [{"compute": 300.0} if i % 2 else {"compute": 10.0} for i in range(6)]
    assert loader_pattern(profile_of(slow_compute, loader_workers=2)) is None
    even = [{"data_loading": 20.0, "compute": 10.0}] * 6
    assert loader_pattern(profile_of(even, loader_workers=2)) is None


def test_the_datasets_ops_are_not_launch_overhead() -> None:
    # examples/slow_loader.py with num_workers=0: 2,304 top-level ops a step, almost all
    # of them the Dataset's indexing; the model has ~30.  Compute is 30 % of the step.
    base = dict(ops_per_step=2304.0)
    steps = [{"data_loading": 70.0, "compute": 30.0}] * 5
    naive = category_shares(profile_of(steps, **base))
    assert naive["launch_overhead"] >= 0.2  # what the old rule said: "compile the model"
    p = profile_of(steps, ops_by_category={"data_loading": 42745, "compute": 440, "optimizer": 140}, **base)
    shares = category_shares(p)
    model_ops = 2304.0 * 580 / 43325
    assert shares["launch_overhead"] == pytest.approx(model_ops * CPU_OP_OVERHEAD_US / 100_000, rel=1e-6)
    assert all(v.kind != "launch_overhead" for v in diagnose(p).secondary)
