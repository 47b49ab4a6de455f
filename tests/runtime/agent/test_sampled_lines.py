"""Line charges from the frame samples of a window recorded without Python frames (``agent/sampled_lines.py``)."""

from __future__ import annotations

from torchtriage.runtime.agent.sampled_lines import OP_SLACK_NS, PYTHON, sampled_charges
from torchtriage.runtime.agent.wire import Step

MS = 1_000_000
PATH = "/w/train.py"


def _charges(samples, ops=(), ranges=()):
    chains: dict[tuple[str, int, str], int] = {}
    found = sampled_charges(samples, [Step(0, 0, 100 * MS, 0), Step(1, 100 * MS, 200 * MS, 0)], list(ops), list(ranges), MS,
                            lambda path, line, function: chains.setdefault((path, line, function), len(chains)))
    lines = {chain: key for key, chain in chains.items()}
    return {(c.step, lines[c.chain][1], c.category, c.name): (c.ns, c.count) for c in found}


def test_a_sample_right_after_an_op_is_the_ops_and_the_rest_the_ranges() -> None:
    ops = [(int(4.98 * MS), 5 * MS, "compute", "aten::mm")]  # the signal came while it ran: handled once it returned
    ranges = [(0, 100 * MS, "python_overhead"), (10 * MS, 20 * MS, "data_loading")]
    samples = [(4 * MS, PATH, "main", 1), (5 * MS + OP_SLACK_NS // 2, PATH, "main", 2), (12 * MS, PATH, "load", 3),
               (13 * MS, PATH, "load", 3), (30 * MS, PATH, "main", 4)]
    charges = _charges(samples, ops, ranges)
    assert charges[(0, 2, "compute", "aten::mm")] == (MS + OP_SLACK_NS // 2, 1)
    assert charges[(0, 3, "data_loading", PYTHON)] == (12 * MS - (5 * MS + OP_SLACK_NS // 2) + MS, 2)  # the time since the last one
    assert charges[(0, 4, "python_overhead", PYTHON)] == (10 * MS, 1)  # (at most ten intervals)
    assert charges[(0, 1, "python_overhead", PYTHON)] == (MS, 1)


def test_a_sample_long_after_an_op_is_python_and_samples_outside_the_steps_are_dropped() -> None:
    ops = [(MS, 2 * MS, "compute", "aten::mm")]
    samples = [(3 * MS, PATH, "main", 1), (150 * MS, PATH, "main", 2), (250 * MS, PATH, "main", 3)]
    charges = _charges(samples, ops)
    assert set(charges) == {(0, 1, "python_overhead", PYTHON), (1, 2, "python_overhead", PYTHON)}


def test_no_samples_no_charges() -> None:
    assert _charges([]) == {}
