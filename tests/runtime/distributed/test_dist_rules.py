"""The straggler rule, the communication figures and the bucket hint at their boundaries
(constructed per-step times; the real runs are in test_dist_ranks/test_dist_nodes/test_dist_ddp)."""

from __future__ import annotations

import pytest

from torchtriage.runtime.distributed.comms import RankComms, communication_summary
from torchtriage.runtime.distributed.ddp import ddp_hints
from torchtriage.runtime.distributed.stragglers import RankSteps, find_stragglers


def _rank(rank: int, steps: list[dict[str, float]]) -> RankSteps:
    """Per step: category -> ms; the step time is their sum."""
    return RankSteps(rank, {i + 1: (sum(times.values()), dict(times)) for i, times in enumerate(steps)})


BALANCED = {"compute": 10.0, "communication": 5.0}


def test_a_rank_slower_in_two_of_three_steps_is_a_straggler_with_the_category_that_explains_it() -> None:
    slow = [{"compute": 10.0, "data_loading": 8.0}, {"compute": 10.0, "data_loading": 8.0}, {"compute": 10.0}]
    result = find_stragglers([_rank(0, [BALANCED] * 3), _rank(1, slow), _rank(2, [BALANCED] * 3)])
    [straggler] = result.stragglers
    assert (straggler.rank, straggler.slower_steps, straggler.steps, straggler.category) == (1, 2, 3, "data_loading")
    assert straggler.gap_ms == pytest.approx(8.0) and straggler.category_gap_ms == pytest.approx(8.0)
    assert straggler.text().startswith("rank 1 is a straggler: it needs 8.0 ms more per step")


def test_one_slow_step_of_three_or_a_gap_within_the_noise_is_not_a_straggler() -> None:
    once = [{"compute": 30.0}, {"compute": 10.0}, {"compute": 10.0}]
    assert find_stragglers([_rank(0, [BALANCED] * 3), _rank(1, once)]).stragglers == []
    # 1.4 ms over a 15 ms step: above NOISE_MS but under 10 % of the step
    close = [{"compute": 11.4, "communication": 5.0}] * 3
    assert find_stragglers([_rank(0, [BALANCED] * 3), _rank(1, close)]).stragglers == []


def test_waiting_in_collectives_does_not_make_a_rank_slow() -> None:
    waits = [{"compute": 10.0, "communication": 40.0}] * 3  # long steps, but all of it waiting
    assert find_stragglers([_rank(0, waits), _rank(1, [BALANCED] * 3)]).stragglers == []


def test_one_rank_or_no_common_steps_cannot_be_judged() -> None:
    assert "at least 2 ranks" in find_stragglers([_rank(0, [BALANCED] * 3)]).note
    late = RankSteps(1, {7: (15.0, dict(BALANCED)), 8: (15.0, dict(BALANCED))})
    result = find_stragglers([_rank(0, [BALANCED] * 3), late])
    assert result.stragglers == [] and result.matched_steps == 0 and "too few" in result.note


def test_the_transfer_is_the_least_in_flight_time_and_the_rest_waits_for_the_straggler() -> None:
    fast = RankComms(0, wait_ms=30.0, in_flight_ms=31.0, overlap=0.03, share=0.8, collectives_per_step=1, allreduces_per_step=1,
                     source="gloo threads")
    slow = RankComms(1, wait_ms=0.5, in_flight_ms=0.8, overlap=0.4, share=0.02, collectives_per_step=1, allreduces_per_step=1,
                     source="gloo threads")
    summary = communication_summary([fast, slow], [1])
    assert summary["transfer_ms"] == 0.8 and summary["share"] == pytest.approx(0.41)
    assert "rank 0's collectives last 30.2 ms longer: it waits for rank 1." in summary["text"]


def test_bucket_advice_needs_a_real_communication_share() -> None:
    model = {"forwards_per_step": 1.0, "no_sync_forwards_per_step": 0.0, "find_unused_parameters": False, "static_graph": False,
             "unused_parameter_bytes": 0, "buckets": 1, "bucket_cap_mb": 25.0, "gradient_bytes": 20 * 2**20, "allreduces_per_step": 1}
    busy = RankComms(0, 12.0, 13.0, 0.1, 0.3, 1, 1, "nccl kernels")
    quiet = RankComms(0, 0.5, 0.6, 0.1, 0.02, 1, 1, "nccl kernels")
    [hint] = ddp_hints([model], busy)
    assert hint["kind"] == "bucket_cap_mb" and "bucket_cap_mb=5" in hint["example"]
    assert ddp_hints([model], quiet) == []
