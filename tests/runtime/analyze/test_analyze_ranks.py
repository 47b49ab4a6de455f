"""``torchtriage analyze`` on a folder of per-rank traces: a real 2-rank DDP job (gloo, CPU) recorded here with plain
torch.profiler, rank 1 sleeping in its step; the ranks from file names; traces without rank metadata; NCCL on a GPU
(a synthetic trace: no GPU here)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchtriage.cli import main as cli_main
from torchtriage.runtime.offline.analyze import analyze_trace
from trace_recording import DATA, check_schema, line_of

pytestmark = pytest.mark.slow
DDP = DATA / "traces" / "ddp_traced.py"
SLOW_MS = "30"  # rank 1's sleep per step, against a ~1-3 ms step of the tiny model


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tensorboard_trace_handler folder: ``<host>_<pid>.<time>.pt.trace.json`` of rank 0 and rank 1."""
    folder = tmp_path_factory.mktemp("ddp") / "log"
    proc = subprocess.run([sys.executable, str(DDP), "--tb", str(folder), "--slow-rank", "1", "--slow-ms", SLOW_MS],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(list(folder.glob("*.pt.trace.json"))) == 2
    return folder


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_rank_is_analysed_and_the_slow_one_is_the_straggler(logdir: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = cli_main(["analyze", str(logdir), "--out", str(out), "--source-root", str(DDP.parent), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0
    report = read(out / "report.json")
    check_schema(report)
    ranks = report["ranks"]
    assert (ranks["launcher"], ranks["covered"], ranks["shown_rank"], ranks["world_size"], ranks["backend"]) == (
        "trace", [0, 1], 0, 2, "gloo")
    assert [s["rank"] for s in ranks["stragglers"]] == [1], ranks["stragglers"]
    assert ranks["stragglers"][0]["gap_ms"] > 20 and ranks["straggler_rule"]["matched_steps"] == 4
    fast, slow = ranks["per_rank"]
    # communication against waiting: gloo's all-reduce is in flight on both ranks; rank 0 waits in it for rank 1
    assert fast["communication"]["source"] == slow["communication"]["source"] == "gloo threads"
    assert fast["communication"]["in_flight_ms"] > 20 and fast["communication"]["wait_ms"] > 20
    assert fast["communication_share"] > 0.5 and slow["communication_share"] < 0.3
    assert slow["busy_ms"] - fast["busy_ms"] > 20
    assert ranks["communication"]["transfer_ms"] < 10 and "it waits for rank 1" in ranks["communication"]["text"]
    assert report["bottleneck"]["evidence"][0]["text"] == ranks["stragglers"][0]["text"]
    # each rank's own report, lines included: rank 0 waits at loss.backward(), rank 1 sleeps
    for entry in (fast, slow):
        own = read(Path(entry["report"]))
        check_schema(own)
        assert own["source"]["rank"] == entry["rank"] and entry["trace"] == own["source"]["path"]
        assert Path(entry["report"]).parent == out / f"rank{entry['rank']}"
    assert read(Path(fast["report"]))["hotspots"][0]["line"] == line_of("loss.backward()", DDP)
    assert read(Path(fast["report"]))["hotspots"][0]["category"] == "communication"
    assert read(Path(slow["report"]))["hotspots"][0]["line"] == line_of("time.sleep(delay)", DDP)
    assert "Ranks in the traces (2 of world size 2" in printed and "rank 1 is a straggler" in printed


def _strip_rank(source: Path, target: Path) -> None:
    data = read(source)
    del data["distributedInfo"]
    target.write_text(json.dumps(data), encoding="utf-8")


def test_ranks_from_file_names_and_an_older_run(logdir: Path, tmp_path: Path) -> None:
    """No distributedInfo: the ranks come from ``rank<N>`` in the names; an older file of rank 0 is left out, by name."""
    files = sorted(logdir.glob("*.pt.trace.json"), key=lambda p: json.loads(p.read_text())["distributedInfo"]["rank"])
    named = tmp_path / "named"
    named.mkdir()
    for rank, file in enumerate(files):
        _strip_rank(file, named / f"job_rank{rank}.1700000000100.pt.trace.json")
    shutil.copy(files[0], named / "job_rank0.1700000000000.pt.trace.json")
    run = analyze_trace(named, out_dir=tmp_path / "run", roots=(DDP.parent,))
    assert run.report is not None
    assert run.report["ranks"]["covered"] == [0, 1] and run.report["ranks"]["world_size"] is None
    assert [s["rank"] for s in run.report["ranks"]["stragglers"]] == [1]
    older = [w for w in run.report["warnings"] if "other trace file(s)" in w]
    assert older and "job_rank0.1700000000000.pt.trace.json" in older[0]


def test_without_rank_metadata_each_trace_is_a_separate_run(logdir: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    for name, file in zip(("alpha", "beta"), sorted(logdir.glob("*.pt.trace.json"))):
        _strip_rank(file, bare / f"{name}.1700000000000.pt.trace.json")
    run = analyze_trace(bare, out_dir=tmp_path / "run", roots=(DDP.parent,))
    assert run.report is not None and "ranks" not in run.report
    check_schema(run.report)
    assert [w.run_dir.name for w in run.workers] == ["alpha", "beta"]
    assert all((tmp_path / "run" / name / "report.json").is_file() for name in ("alpha", "beta"))
    warning = next(w for w in run.report["warnings"] if "no rank metadata" in w)
    assert "each is analysed as a separate run" in warning and "alpha/, beta/" in warning


def nccl_rank_trace(rank: int, compute_us: int, steps: int = 3, slowest_us: int = 12_000, transfer_us: int = 500) -> dict[str, Any]:
    """A CUDA rank as kineto writes it under NCCL: per step a matmul (CPU op, kernel), ``nccl:all_reduce`` with
    ``record_param_comms`` launching an ``ncclDevKernel_*`` that runs until the slowest rank has joined (plus the
    transfer), and a ``cudaStreamSynchronize`` waiting for it."""
    events: list[dict[str, Any]] = []
    corr = 1000 * (rank + 1)

    def x(cat: str, name: str, ts: int, dur: int, pid: int = 1, **args: Any) -> None:
        events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": 7 if pid == 0 else 1, "ts": ts, "dur": dur, "args": args})

    for i in range(steps):
        start = 1_000_000 + i * (slowest_us + 1000)
        end = start + slowest_us + 50 + transfer_us
        x("user_annotation", f"ProfilerStep#{i + 1}", start, end + 100 - start)
        x("cpu_op", "aten::mm", start, compute_us)
        x("cuda_runtime", "cudaLaunchKernel", start + 100, 10, correlation=corr + 2 * i)
        x("kernel", "sm90_xmma_gemm_f32f32_tf32f32_f32", start + 200, compute_us - 200, pid=0, correlation=corr + 2 * i)
        joined = start + compute_us
        x("user_annotation", "nccl:all_reduce", joined, 100)
        x("cpu_op", "record_param_comms", joined + 10, 80)
        x("cuda_runtime", "cudaLaunchKernel", joined + 20, 10, correlation=corr + 2 * i + 1)
        x("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", joined + 50,
          end - joined - 50, pid=0, correlation=corr + 2 * i + 1)
        x("cuda_runtime", "cudaStreamSynchronize", joined + 200, end + 20 - joined - 200, correlation=0)
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85 * 2**30}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}, "traceEvents": events}


def test_nccl_kernels_and_the_wait_in_a_cuda_sync(tmp_path: Path) -> None:
    """Rank 1 computes 10 ms longer; rank 0's NCCL kernel spins for it, and its stream sync waits: that part of the
    sync is communication wait, the in-flight time comes from the NCCL kernels, and rank 1 is the straggler."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for rank, compute_us in ((0, 2_000), (1, 12_000)):
        (logs / f"node1_{100 + rank}.1700000000000.pt.trace.json").write_text(json.dumps(nccl_rank_trace(rank, compute_us)))
    run = analyze_trace(logs, out_dir=tmp_path / "run")
    assert run.report is not None
    check_schema(run.report)
    ranks = run.report["ranks"]
    assert ranks["backend"] == "nccl" and [s["rank"] for s in ranks["stragglers"]] == [1]
    assert ranks["stragglers"][0]["category"] == "compute"
    fast, slow = ranks["per_rank"]
    assert fast["communication"]["source"] == "nccl kernels"
    assert fast["communication"]["in_flight_ms"] == pytest.approx(10.5, abs=0.05)
    assert slow["communication"]["in_flight_ms"] == pytest.approx(0.5, abs=0.05)
    # the sync's 10.35 ms inside the kernel, the nccl:all_reduce range (0.1 ms), and 0.1 ms after it with no event, in the kernel
    assert fast["communication"]["wait_ms"] == pytest.approx(10.35 + 0.1 + 0.1, abs=0.01)
    assert slow["communication"]["wait_ms"] == pytest.approx(0.35 + 0.1 + 0.1, abs=0.01)
    assert fast["bottleneck"] == "communication" and ranks["communication"]["transfer_ms"] == pytest.approx(0.5, abs=0.05)
    assert (fast["rank"], fast["pid"], fast["host"]) == (0, 100, None)
