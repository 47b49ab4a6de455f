"""What bounds the cost of a profiled run: the recorded window, the event cap, the step search, the one compressed trace."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from torchtriage.runtime.agent.collect import USER_SCOPE, Collector, EventType
from torchtriage.runtime.agent.tracefile import TRACE_NAME, TraceWriter, cut_events, relabel_dataloader
from torchtriage.runtime.agent.window import Window
from torchtriage.runtime.trace import load_trace

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


def test_the_window_follows_torch_s_schedule() -> None:
    for skip_first, wait, warmup, active in [(1, 1, 2, 5), (0, 0, 0, 1), (3, 0, 1, 3), (1, 2, 0, 2)]:
        ours = Window(skip_first, wait, warmup, active)
        torch_s = torch.profiler.schedule(skip_first=skip_first, wait=wait, warmup=warmup, active=active, repeat=1)
        assert [ours(step) for step in range(20)] == [torch_s(step) for step in range(20)]


def _busy(calls: int) -> None:
    for _ in range(calls):
        abs(-1)


def _counted_window(calls: int, max_events: int, active: int = 5, python_frames: str = "auto") -> Window:
    window = Window(skip_first=1, wait=1, warmup=2, active=active, max_events=max_events, python_frames=python_frames)
    window.after_step(0)  # step 0 is skipped, step 1 waits: nothing counted yet
    window.before_step()
    window.after_step(1)  # the step before warm-up: its Python calls are counted
    _busy(calls)
    window.before_step()
    assert calls <= window.events_per_step < calls + 100
    return window


def test_heavy_steps_with_python_frames_get_a_shorter_window() -> None:
    window = _counted_window(1_000, max_events=3_000, python_frames="on")
    assert window.active == 2 and not window.stackless and "recording 2 of the 5 steps" in (window.note() or "")
    assert [window(step) for step in range(2, 7)] == [torch.profiler.ProfilerAction.WARMUP] * 2 + [
        torch.profiler.ProfilerAction.RECORD, torch.profiler.ProfilerAction.RECORD_AND_SAVE, torch.profiler.ProfilerAction.NONE]
    assert window.summary()["python_frames"] is True


def test_steps_too_heavy_for_the_shortest_window_lose_their_python_frames_not_steps() -> None:
    window = _counted_window(1_000, max_events=3_000)  # 5 steps of 1,000 calls: more than 3,000
    assert window.stackless and window.active == 5
    assert "recorded without them" in (window.note() or "") and window.summary()["python_frames"] is False


def test_a_budget_that_holds_the_shortest_window_keeps_the_frames_and_shortens_it() -> None:
    window = _counted_window(1_000, max_events=6_500, active=10)  # 5 steps fit, 10 do not
    assert not window.stackless and window.active == 6 and "recording 6 of the 10 steps" in (window.note() or "")


def test_a_short_fixed_window_that_fits_keeps_its_frames() -> None:
    window = _counted_window(1_000, max_events=3_000, active=2)  # 2 steps of 1,000 calls fit in 3,000
    assert not window.stackless and window.active == 2 and window.note() is None


def test_python_frames_off_records_without_them_from_the_start() -> None:
    window = Window(skip_first=0, wait=1, warmup=1, active=5, python_frames="off")
    assert window.stackless and window.note() is None
    with pytest.raises(ValueError, match="python_frames"):
        Window(skip_first=0, wait=1, warmup=1, active=5, python_frames="sometimes")


def test_light_steps_and_no_limit_keep_the_window() -> None:
    for max_events in (0, 10**6):
        window = Window(skip_first=0, wait=1, warmup=1, active=5, max_events=max_events)
        window.after_step(0)
        _busy(100)
        window.before_step()
        assert window.active == 5 and window.note() is None


# The layout kineto writes (torch 2.13), cut down to three events.
KINETO = b"""{
  "schemaVersion": 1,
  "deviceProperties": [],
  "baseTimeNanoseconds": 1000000000,
  "traceEvents": [
  {
    "ph": "M", "name": "process_name", "pid": 7, "tid": 0,
    "args": {
      "name": "python"
    }
  },
  {
    "ph": "X",
    "cat": "user_annotation",
    "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "pid": 7,
    "tid": 7,
    "ts": 10.0,
    "dur": 5.0
    ,
    "args": {
      "External id": 2
    }
  },
  {
    "ph": "X",
    "cat": "user_annotation",
    "name": "ProfilerStep#1",
    "pid": 7,
    "tid": 7,
    "ts": 2.0,
    "dur": 50.0
  },
  {
    "ph": "X",
    "cat": "cpu_op",
    "name": "aten::add",
    "pid": 7,
    "tid": 7,
    "ts": 60.0,
    "dur": 1.0
  }
  ],"traceName": "x.json" }"""


def _events(text: bytes) -> list[dict[str, Any]]:
    return json.loads(text)["traceEvents"]


def test_the_loader_s_annotations_become_cpu_ops_for_torch_tb_profiler() -> None:
    data = bytearray(KINETO)
    assert relabel_dataloader(data) == 1 and len(data) == len(KINETO)  # same length: edited in place
    cats = {e["name"]: e.get("cat") for e in _events(bytes(data))}
    assert cats["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] == "cpu_op"
    assert cats["ProfilerStep#1"] == "user_annotation"  # steps stay annotations


def test_a_cut_drops_the_events_that_start_after_it_and_keeps_metadata() -> None:
    pieces = cut_events(KINETO, end_ns=1_000_000_000 + 30_000)  # 30 us after the base time
    assert pieces is not None
    events = _events(b"".join(pieces))
    assert [e["name"] for e in events] == ["process_name", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "ProfilerStep#1"]
    assert cut_events(b"not a kineto trace", 0) is None


def test_a_cut_keeps_runs_of_events_as_views_of_the_export_and_joins_them_into_valid_json() -> None:
    """Events dropped between kept ones (kineto writes each thread's events as a block, so the cut
    interleaves): the kept runs are views into the export, not copies, and the text still parses."""
    data = bytearray(KINETO.replace(b'"ts": 60.0', b'"ts": 20.0').replace(b'"ts": 10.0', b'"ts": 45.0'))
    pieces = cut_events(data, end_ns=1_000_000_000 + 30_000)
    assert pieces is not None
    assert [e["name"] for e in _events(b"".join(pieces))] == ["process_name", "ProfilerStep#1", "aten::add"]
    copied = sum(len(p) for p in pieces if not isinstance(p, memoryview))
    assert copied <= 8 and sum(len(p) for p in pieces) > len(data) // 2  # separators only; the events are views


def test_the_trace_is_written_once_compressed_and_linked_into_tb(tmp_path: Path) -> None:
    for cut in (None, 1_000_000_000 + 30_000):
        run = tmp_path / ("cut" if cut else "whole")
        run.mkdir()
        writer = TraceWriter(str(run), "myrun")
        Path(writer.raw).write_bytes(KINETO)
        writer.start()
        assert writer.finish(cut) is None
        assert not os.path.exists(writer.raw)
        trace = run / TRACE_NAME
        [linked] = list((run / "tb" / "myrun").glob("*.pt.trace.json.gz"))
        assert os.path.samefile(linked, trace)
        names = [e["name"] for e in _events(gzip.decompress(trace.read_bytes()))]
        assert ("aten::add" in names) == (cut is None)
        assert len(load_trace(trace).events) == (3 if cut is None else 2)
