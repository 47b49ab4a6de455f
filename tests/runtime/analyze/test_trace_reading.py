"""Reading a trace in pieces: the streaming reader against ``json.load``, the time order through temporary
files against an in-memory sort, a logdir with several workers and runs, and the agent's names kept equal."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchtriage.runtime.offline import reader
from torchtriage.runtime.offline.analyze import analyze_trace
from torchtriage.runtime.offline.cycles import step_count
from torchtriage.runtime.offline.events import TraceScan
from torchtriage.runtime.offline.inputs import choose_trace
from torchtriage.runtime.offline.ordering import SortedRecords
from torchtriage.runtime.offline.trace_event import ARG_KEYS, EVENT_KEYS, TraceEvent, from_dict
from trace_recording import CUDA

TRACE = CUDA / "sync_every_step_v1" / "trace.json.gz"


def test_the_reader_gives_what_json_load_gives_whatever_the_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = json.loads(gzip.decompress(TRACE.read_bytes()))
    monkeypatch.setattr(reader, "CHUNK", 97)  # values cut at every place
    header, events = reader.read_trace(TRACE)
    assert list(events) == whole["traceEvents"]
    assert header == {k: v for k, v in whole.items() if k != "traceEvents"}  # traceName comes after the events


def test_the_json_array_format(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1.5, "dur": 2}, {"ph": "i", "name": "x", "ts": 3}]
    path = tmp_path / "array.json"
    path.write_text(json.dumps(events))
    header, read = reader.read_trace(path)
    assert header == {} and list(read) == events


def _fields(event: Any) -> tuple[Any, ...]:
    args = tuple(getattr(event.args, name) for name in ARG_KEYS)
    return tuple(getattr(event, key) for key in EVENT_KEYS) + (args,)


def _slow_events(path: Path) -> list[tuple[Any, ...]]:
    """The events as ``json`` decodes them one at a time, each as the struct's fields (non-objects as they are)."""
    _, events = reader.read_trace(path)
    return [_fields(from_dict(e)) if isinstance(e, dict) else e for e in events]


def _fast_events(path: Path) -> tuple[dict[str, Any], list[Any]]:
    header, events = reader.read_events(path)
    return header, [_fields(e) if isinstance(e, TraceEvent) else e for e in events]


@pytest.mark.parametrize("run_chars", [300, 4096, reader.RUN_CHARS])
def test_runs_of_whole_events_give_what_the_slow_reader_gives(monkeypatch: pytest.MonkeyPatch, run_chars: int) -> None:
    whole = json.loads(gzip.decompress(TRACE.read_bytes()))
    monkeypatch.setattr(reader, "RUN_CHARS", run_chars)
    monkeypatch.setattr(reader, "CHUNK", 997)
    runs: list[int] = []
    decode = reader.decode_events
    monkeypatch.setattr(reader, "decode_events", lambda text: runs.append(len(text)) or decode(text))
    header, events = _fast_events(TRACE)
    assert len(runs) > 3  # read in runs, not event by event
    assert events == _slow_events(TRACE) and len(events) == len(whole["traceEvents"]) > 1000
    assert header == {k: v for k, v in whole.items() if k != "traceEvents"}


ODD_EVENTS: list[Any] = [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
     "args": {"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Call stack": "a.py(3): f"}},
    {"ph": "X", "cat": "cpu_op", "name": "brace}, {inside", "pid": 1, "tid": 1, "ts": 20, "dur": 1},  # a cut candidate in a string
    {"ph": "X", "cat": "cpu_op", "name": "nested", "pid": 1, "tid": 1, "ts": 30, "dur": 1,
     "args": {"list": [{"a": 1}, {"b": 2}], "correlation": 7}},  # objects in a list: cut candidates at depth 3
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "40", "dur": None, "args": None},  # args not an object
    17,  # not an object at all
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 50, "args": {"Bytes": 512, "Device Type": 1, "Addr": 9}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 60.25, "dur": 2, "args": {"Sequence number": 3}},
]


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("run_chars", [40, 200, 1 << 16])
def test_odd_layouts_read_the_same_in_runs_or_one_by_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         fast: bool, run_chars: int) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ODD_EVENTS * 20, "traceName": "odd"}, indent=2))
    monkeypatch.setattr(reader, "RUN_CHARS", run_chars)
    monkeypatch.setattr(reader, "FAST", fast)
    header, events = _fast_events(path)
    assert events == _slow_events(path) and header == {"schemaVersion": 1, "traceName": "odd"}
    assert events.count(17) == 20 and sum(1 for e in events if isinstance(e, tuple) and e[2] == "brace}, {inside") == 20


def test_without_msgspec_the_report_is_the_same(tmp_path: Path) -> None:
    """A bare install without msgspec reads event by event (``json``) into the same report."""
    code = ("import sys, json; sys.modules['msgspec'] = None\n"
            "from torchtriage.runtime.offline.analyze import analyze_trace\n"
            "from torchtriage.runtime.offline import trace_event\n"
            f"run = analyze_trace({str(TRACE)!r}, out_dir={str(tmp_path / 'bare')!r})\n"
            "print(json.dumps([trace_event.FAST, run.report['breakdown'], run.report['gpu_busy'], run.report['hotspots']]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    fast, breakdown, busy, hotspots = json.loads(done.stdout.strip().splitlines()[-1])
    report = analyze_trace(TRACE, out_dir=tmp_path / "fast").report
    assert report is not None and not fast
    assert [breakdown, busy, hotspots] == json.loads(json.dumps([report["breakdown"], report["gpu_busy"], report["hotspots"]]))


def test_a_cut_off_trace_is_worded_the_same_by_both_readers(tmp_path: Path) -> None:
    text = json.dumps({"traceEvents": ODD_EVENTS[:3] * 200}, indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) * 2 // 3])
    with pytest.raises(reader.TraceError) as slow:
        list(reader.read_trace(path)[1])
    with pytest.raises(reader.TraceError) as fast:
        list(reader.read_events(path)[1])
    assert str(fast.value) == str(slow.value) and "the file is cut off" in str(fast.value)


def test_records_come_back_in_order_through_temporary_files() -> None:
    scan = TraceScan()
    _, events = reader.read_events(TRACE)
    records = [r for r in map(scan.record, events) if r is not None]
    assert len(records) > 2000
    spilled = SortedRecords(run=1000)
    for record in records:
        spilled.add(record)
    assert spilled.spilled_runs == len(records) // 1000
    assert list(spilled) == sorted(records)


def test_a_small_sort_run_gives_the_same_report(tmp_path: Path) -> None:
    whole = analyze_trace(TRACE, out_dir=tmp_path / "memory").report
    pieces = analyze_trace(TRACE, out_dir=tmp_path / "disk", run_size=500).report
    assert whole is not None and pieces is not None
    for key in ("breakdown", "step_times_ms", "hotspots", "bottleneck", "operators", "gpu_busy", "sync_points"):
        assert whole[key] == pieces[key], key


def test_a_logdir_with_ranks_and_runs(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    for name in ("job_rank0.1700000000000", "job_rank1.1700000000001", "job_rank0.1600000000000"):
        shutil.copy(TRACE, logdir / f"{name}.pt.trace.json.gz")
    choice = choose_trace(logdir)
    assert choice.path.name == "job_rank0.1700000000000.pt.trace.json.gz" and choice.rank == 0
    assert choice.others == [{"path": str(logdir / "job_rank1.1700000000001.pt.trace.json.gz"), "rank": 1}]
    assert choice.left_out == 1
    run = analyze_trace(logdir, out_dir=tmp_path / "run")  # both ranks, each in rank<N>/, the older file left out
    assert run.report is not None and [w.run_dir.name for w in run.workers] == ["rank0", "rank1"]
    assert run.report["source"]["rank"] == 0 and run.report["source"]["other_traces"] == choice.others
    assert run.report["ranks"]["covered"] == [0, 1] and run.report["ranks"]["launcher"] == "trace"
    warnings = " ".join(run.report["warnings"])
    assert "1 other trace file(s) of the same worker(s)" in warnings and "left out: job_rank0.1600000000000.pt" in warnings


def test_the_sync_names_are_the_agents() -> None:
    from torchtriage.runtime.agent.device_events import CUDA_SYNCS
    from torchtriage.runtime.agent.node_visit import BACKWARD_PREFIX, COMPILE_OP, SYNC_OPS
    from torchtriage.runtime.offline import device, sweep

    assert device.CUDA_SYNCS == CUDA_SYNCS and device.SYNC_OPS == SYNC_OPS
    assert sweep.BACKWARD_PREFIX == BACKWARD_PREFIX and sweep.COMPILE_OP == COMPILE_OP


def _cut_short(source: Path, target: Path, steps: int) -> None:
    """A copy of ``source`` holding only its first ``steps`` ProfilerStep ranges (a cycle the job's end cut short)."""
    whole = json.loads(gzip.decompress(source.read_bytes()))
    starts = sorted(e["ts"] for e in whole["traceEvents"]
                    if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#"))
    end = starts[steps]
    whole["traceEvents"] = [e for e in whole["traceEvents"] if not isinstance(e.get("ts"), (int, float)) or e["ts"] < end]
    target.write_bytes(gzip.compress(json.dumps(whole).encode()))


def test_a_worker_s_fullest_cycle_is_analysed_not_a_newer_one_cut_short(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    full = logdir / "host_42.1700000000000.pt.trace.json.gz"
    shutil.copy(TRACE, full)
    short = logdir / "host_42.1700000009000.pt.trace.json.gz"
    _cut_short(TRACE, short, steps=1)
    assert step_count(full) == analyze_trace(TRACE, out_dir=tmp_path / "alone").report["steps_profiled"] > 1
    assert step_count(short) == 1
    choice = choose_trace(logdir)
    assert choice.path == full and choice.left_out == 1
    assert any(f"{short.name}, holds 1 step(s)" in w and f"the fuller cycle {full.name}" in w for w in choice.warnings)

    same = tmp_path / "same"  # equal cycles: the newest, as before
    same.mkdir()
    for stamp in ("1700000000000", "1700000009000"):
        shutil.copy(TRACE, same / f"host_42.{stamp}.pt.trace.json.gz")
    assert choose_trace(same).path.name == "host_42.1700000009000.pt.trace.json.gz"


def test_a_damaged_cycle_counts_the_steps_before_the_damage(tmp_path: Path) -> None:
    data = TRACE.read_bytes()
    cut = tmp_path / "cut.pt.trace.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    assert 0 <= step_count(cut) <= step_count(TRACE)
    assert step_count(tmp_path / "missing.json") == 0
