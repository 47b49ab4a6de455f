"""Reading a trace in pieces: the streaming reader against ``json.load``, the time order through temporary
files against an in-memory sort, a logdir with several workers and runs, and the agent's names kept equal."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from torchtriage.runtime.offline import reader
from torchtriage.runtime.offline.analyze import analyze_trace
from torchtriage.runtime.offline.events import TraceScan
from torchtriage.runtime.offline.inputs import choose_trace
from torchtriage.runtime.offline.ordering import SortedRecords
from trace_recording import CUDA

TRACE = CUDA / "sync_every_step" / "trace.json.gz"


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


def test_records_come_back_in_order_through_temporary_files() -> None:
    scan = TraceScan()
    _, events = reader.read_trace(TRACE)
    records = [r for r in map(scan.record, events) if r is not None]
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
    assert "1 older trace file(s) of the same worker(s)" in warnings and "left out: job_rank0.1600000000000.pt" in warnings


def test_the_sync_names_are_the_agents() -> None:
    from torchtriage.runtime.agent.device_events import CUDA_SYNCS
    from torchtriage.runtime.agent.node_visit import BACKWARD_PREFIX, COMPILE_OP, SYNC_OPS
    from torchtriage.runtime.offline import device, sweep

    assert device.CUDA_SYNCS == CUDA_SYNCS and device.SYNC_OPS == SYNC_OPS
    assert sweep.BACKWARD_PREFIX == BACKWARD_PREFIX and sweep.COMPILE_OP == COMPILE_OP
