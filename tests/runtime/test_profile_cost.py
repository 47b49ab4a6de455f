"""What bounds the cost of a profiled run: the event cap, the step search."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch

from torchtriage.runtime.agent.collect import USER_SCOPE, Collector, EventType

FUNCTION_SCOPE = torch._C._profiler.RecordScope.FUNCTION


def op(name: str, start: int, end: int, *children: Any, tid: int = 1, scope: Any = FUNCTION_SCOPE) -> SimpleNamespace:
    """A stand-in for one TorchOp node of the profiler's event tree."""
    return SimpleNamespace(tag=EventType.TorchOp, name=name, start_time_ns=start, end_time_ns=end, duration_time_ns=end - start,
                           start_tid=tid, extra_fields=SimpleNamespace(scope=scope, sequence_number=-1), children=list(children))


def steps_tree(n_steps: int = 4, ops_per_step: int = 10) -> list[SimpleNamespace]:
    """``n_steps`` steps of 1000 ns, each with ``ops_per_step`` ops of 50 ns."""
    tree = []
    for k in range(n_steps):
        tree.append(op(f"ProfilerStep#{k + 1}", 1000 * k, 1000 * (k + 1), scope=USER_SCOPE))
        tree += [op("aten::add", 1000 * k + 60 * i, 1000 * k + 60 * i + 50) for i in range(ops_per_step)]
    return tree


def test_the_event_cap_keeps_whole_steps_and_what_was_charged_to_them() -> None:
    collector = Collector(None, "/no/agent", max_events=25)  # type: ignore[arg-type]
    collector.collect(steps_tree())
    kept = len(collector.steps)
    assert collector.steps_recorded == 4 and 1 <= kept < 4
    result = collector.result()
    assert {c.step for c in result["charges"]} == set(range(kept))
    [add] = [o for o in result["ops"] if o.name == "aten::add"]
    assert add.calls == 10 * kept and add.self_ns == 500 * kept
    assert collector.events >= 25


def test_no_cap_and_at_least_one_step() -> None:
    unlimited = Collector(None, "/no/agent")  # type: ignore[arg-type]
    unlimited.collect(steps_tree())
    assert len(unlimited.steps) == 4
    tiny = Collector(None, "/no/agent", max_events=1)  # type: ignore[arg-type]
    tiny.collect(steps_tree())
    assert len(tiny.steps) == 1


def test_steps_are_found_near_the_agent_s_step_calls_or_by_a_full_search() -> None:
    near = Collector(None, "/no/agent")  # type: ignore[arg-type]
    near.collect(steps_tree(), step_hints=[(1000 * k, 1000 * k + 1) for k in range(4)])
    anywhere = Collector(None, "/no/agent")  # type: ignore[arg-type]
    anywhere.collect(steps_tree(), step_hints=[(10**12, 10**12 + 1)])  # a clock that disagrees: searched everywhere
    assert [s.index for s in near.steps] == [s.index for s in anywhere.steps] == [1, 2, 3, 4]
