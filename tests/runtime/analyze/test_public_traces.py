"""``torchtriage analyze`` and ``compare`` on real GPU traces recorded elsewhere by public projects
(``tests/data/runtime/traces/public``; their sources, commits and licenses are in tests/data/README.md):

* kineto's TensorBoard-plugin samples: ResNet-50 training on a V100 recorded with torch 1.9 (June 2021), the old
  schema (``Operator`` / ``Kernel`` / ``Runtime`` / ``Memcpy`` / ``Memset`` categories, ``Call stack`` arguments,
  ``[memory]`` events without an allocator total), once with ``num_workers=0`` and once with 4;
* HolisticTraceAnalysis' test traces: two ranks of a 128-rank NCCL job (sampled), and rank 0 of a 2-rank NCCL job.

Every figure checked here is computed again from the trace's JSON with the standard library alone."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pytest

from torchtriage.runtime.compare.document import load_schema as compare_schema
from torchtriage.runtime.offline.analyze import AnalyzedRun, analyze_trace
from trace_recording import DATA, check_schema

PUBLIC = DATA / "traces" / "public"
KINETO = PUBLIC / "kineto"
WORKERS_0 = KINETO / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"
WORKERS_4 = KINETO / "resnet50_num_workers_4" / "worker0.1623212756351.pt.trace.json.gz"
SCRIPT = KINETO / "examples" / "resnet50_profiler_api.py"  # the tutorial script as it was when the samples were recorded
HTA = PUBLIC / "HolisticTraceAnalysis"
PAIR = HTA / "trace_filter"  # sampled_rank-0.json.gz, sampled_rank-1.json.gz
NCCL = HTA / "nccl_parser_config" / "nccl_data.json.gz"

GPU_CATEGORIES = {"Kernel", "Memcpy", "Memset", "kernel", "gpu_memcpy", "gpu_memset"}  # 1.9-era and current names
Interval = tuple[float, float]


# -- the same figures from the JSON, by hand --------------------------------------------------------------
def load(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def complete(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"]


def steps_of(events: list[dict[str, Any]]) -> list[Interval]:
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("ProfilerStep#"))


def covered(intervals: list[Interval], low: float, high: float) -> float:
    """How much of [low, high) the union of ``intervals`` covers."""
    total, cursor = 0.0, low
    for start, end in sorted(intervals):
        start, end = max(start, cursor), min(end, high)
        if end > start:
            total += end - start
            cursor = end
    return total


def per_step(events: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> list[float]:
    """Per ProfilerStep: the share of its range that the union of the kept events covers."""
    intervals = [(e["ts"], e["ts"] + e["dur"]) for e in events if keep(e)]
    return [covered(intervals, low, high) / (high - low) for low, high in steps_of(events)]


def over_steps(events: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> float:
    """The same over all steps together (each step weighted by its length)."""
    steps = steps_of(events)
    shares = per_step(events, keep)
    return sum(s * (high - low) for s, (low, high) in zip(shares, steps)) / sum(high - low for low, high in steps)


def is_gpu(event: dict[str, Any]) -> bool:
    return event.get("cat") in GPU_CATEGORIES


def is_nccl_kernel(event: dict[str, Any]) -> bool:
    return event.get("cat") == "kernel" and event["name"].startswith("nccl")


def script_line(event: dict[str, Any], script: str = SCRIPT.name) -> int:
    """The line of the tutorial script in an event's ``Call stack`` (innermost frame first, ``file(line): function``)."""
    for frame in event["args"]["Call stack"].split(";"):
        if frame.startswith(script + "("):
            return int(frame[len(script) + 1:frame.index(")")])
    raise AssertionError(event["args"]["Call stack"])


def lines_of(events: list[dict[str, Any]], name: str) -> set[int]:
    return {script_line(e) for e in events if e["name"] == name and "Call stack" in e.get("args", {})}


def codes(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for f in report["runtime_findings"]}


# -- kineto's ResNet-50 samples (torch 1.9) ---------------------------------------------------------------
@pytest.fixture(scope="module")
def workers_0(tmp_path_factory: pytest.TempPathFactory) -> AnalyzedRun:
    return analyze_trace(WORKERS_0, out_dir=tmp_path_factory.mktemp("workers_0") / "run")


def test_the_old_schema_trace_has_its_steps_verdict_and_gpu_busy_share(workers_0: AnalyzedRun) -> None:
    """With num_workers=0 the DataLoader builds every batch in the training process: the TensorBoard tutorial's
    point, and the verdict here, with the loader's share equal to that of its ``enumerate(DataLoader)`` ranges."""
    events = complete(load(WORKERS_0))
    steps = steps_of(events)
    report = workers_0.report
    assert report is not None, workers_0.profile.warnings
    check_schema(report)
    assert report["source"]["kind"] == "trace" and report["source"]["python_frames"] is False
    assert report["step_detection"] == "profiler_step" and report["steps_profiled"] == len(steps) == 6
    assert report["step_times_ms"] == pytest.approx([(high - low) / 1000 for low, high in steps], abs=1e-3)
    assert report["device"] == "cuda" and report["device_name"] == "Tesla V100-DGXS-32GB"

    loading = over_steps(events, lambda e: e["name"].startswith("enumerate(DataLoader)#"))
    assert 0.30 < loading < 0.45  # over the 30% bar: the first category guides look at
    assert report["bottleneck"]["kind"] == "data_loading"
    assert report["breakdown"]["data_loading"] == pytest.approx(report["bottleneck"]["share"]) == pytest.approx(loading, abs=1e-3)
    # the iterator's class says the loader has no workers: the report says num_workers=0
    iterators = {e["name"] for e in events if e["name"].startswith("enumerate(")}
    assert iterators == {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"}
    assert report["loader_workers"] == 0
    assert any("num_workers=0" in e["text"] for e in report["bottleneck"]["evidence"])

    busy = per_step(events, is_gpu)
    assert report["gpu_busy"]["per_step"] == pytest.approx(busy, abs=1e-3)
    assert report["gpu_busy"]["share"] == pytest.approx(over_steps(events, is_gpu), abs=1e-3)
    assert min(busy) > 0.5 and "TTR605" not in codes(report)  # busy over the plugin's 50% bar in every step


def test_the_hot_lines_are_the_call_stacks_lines_without_the_source(workers_0: AnalyzedRun) -> None:
    """The trace names ``resnet50_profiler_api.py`` with no folder, and it is not on this machine: the lines are the
    ``Call stack``'s own (the calling lines: no source needed), kept by that name with no text and no warning."""
    events = complete(load(WORKERS_0))
    report = workers_0.report
    assert report is not None
    loop = lines_of(events, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
    forward = lines_of(events, "aten::cudnn_convolution")
    step = lines_of(events, "Optimizer.step#SGD.step")
    zero = lines_of(events, "Optimizer.zero_grad#SGD.zero_grad")
    assert (loop, forward, step, zero) == ({42}, {46}, {51}, {49})
    hot = {(h["line"], h["category"]): h for h in report["hotspots"]}
    assert {h["path"] for h in report["hotspots"]} == {SCRIPT.name}
    assert {h["source"] for h in report["hotspots"]} == {""}
    assert {(42, "data_loading"), (46, "compute"), (51, "optimizer"), (49, "optimizer")} <= set(hot)
    # the loop's line carries the loading (its ops and the Python between them in the enumerate(DataLoader) range);
    # the forward line the convolutions' GPU time
    assert [(h["line"], h["category"]) for h in report["hotspots"][:2]] == [(42, "data_loading"), (46, "compute")]
    assert max((h for h in report["hotspots"] if h["category"] == "data_loading"), key=lambda h: h["share"])["line"] == 42
    assert not [w for w in report["warnings"] if "not on this machine" in w or "def line" in w]
    findings = codes(report)
    assert (findings["TTR302"]["line"], findings["TTR507"]["line"], findings["TTR606"]["line"]) == (42, 49, 46)
    assert "num_workers=0" in findings["TTR302"]["message"]
    # no Tensor-Core kernel ran (fp32 on a V100): the plugin's AMP rule
    kernels = {e["name"] for e in events if e.get("cat") == "Kernel"}
    assert not [k for k in kernels if any(mark in k.lower() for mark in ("884", "hmma", "wmma", "1688", "16816", "tensorop"))]


def test_with_the_script_the_lines_have_its_text(tmp_path: Path) -> None:
    run = analyze_trace(WORKERS_0, out_dir=tmp_path / "run", roots=(SCRIPT.parent,))
    assert run.report is not None
    script = SCRIPT.read_text(encoding="utf-8").splitlines()
    assert script[41].strip() == "for step, data in enumerate(trainloader, 0):"
    by_line = {h["line"]: h for h in run.report["hotspots"] if h["category"] == "data_loading"}
    assert by_line[42]["source"] == script[41].strip() and Path(by_line[42]["path"]) == SCRIPT.resolve()


def test_the_memory_curve_of_events_without_an_allocator_total(workers_0: AnalyzedRun) -> None:
    """torch 1.9's ``[memory]`` events carry only the bytes allocated or freed: the curve is their running sum
    since recording began (so it leaves out the weights), and a warning says so."""
    trace = load(WORKERS_0)
    memory = sorted((e["ts"], n, e["args"]["Bytes"]) for n, e in enumerate(trace["traceEvents"])
                    if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1)
    assert memory and not any("Total Allocated" in e.get("args", {}) for e in trace["traceEvents"] if e.get("name") == "[memory]")
    running, curve = 0, []
    for ts, _, size in memory:
        running += size
        curve.append((ts, running))
    peaks = [max(total for ts, total in curve if low <= ts < high) for low, high in steps_of(complete(trace))]
    report = workers_0.report
    assert report is not None
    assert [s["peak_bytes"] for s in report["memory"]["steps"]] == peaks
    assert report["memory"]["peak_bytes"] == max(peaks) > 2**30
    assert any("no allocator total" in w for w in report["warnings"])


def test_compare_the_two_samples_faster_with_less_loading(tmp_path: Path) -> None:
    """``torchtriage compare`` of the num_workers=0 trace and the num_workers=4 logdir, as a user runs it."""
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "torchtriage", "compare", str(WORKERS_0), str(WORKERS_4.parent), "--out", str(out),
                           "--source-root", str(SCRIPT.parent), "--format", "json"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert json.loads((out / "after" / "compare.json").read_text(encoding="utf-8")) == document
    errors = list(jsonschema.Draft202012Validator(compare_schema()).iter_errors(document))
    assert not errors, [e.message for e in errors[:3]]

    before, after = complete(load(WORKERS_0)), complete(load(WORKERS_4))
    mean_ms = [sum(high - low for low, high in steps_of(e)) / len(steps_of(e)) / 1000 for e in (before, after)]
    step = document["step_time"]
    assert (step["before_ms"], step["after_ms"]) == pytest.approx(tuple(mean_ms), abs=1e-3)
    assert step["change"] == "faster" and document["verdict"]["change"] == "faster"
    interval = step["interval"]
    assert interval["method"] == "block bootstrap" and interval["steps"] == {"before": 6, "after": 6}
    assert interval["low_ms"] <= step["delta_ms"] <= interval["high_ms"] < -step["threshold_ms"]
    verdict = document["verdict"]
    assert verdict["lead_category"] == verdict["bottleneck_before"] == "data_loading" and verdict["bottleneck_after"] == "compute"

    loading = [over_steps(e, lambda x: x["name"].startswith("enumerate(DataLoader)#")) for e in (before, after)]
    assert loading[1] < 0.05 < 0.30 < loading[0]
    row = next(c for c in document["categories"] if c["category"] == "data_loading")
    assert row["change"] == "down" and (row["before_share"], row["after_share"]) == pytest.approx(tuple(loading), abs=1e-3)
    loop = next(r for r in document["lines"] if r["before"] and r["before"]["line"] == 42)
    assert loop["match"] == "same" and loop["before"]["source"] == "for step, data in enumerate(trainloader, 0):"
    assert loop["before"]["category"] == "data_loading" and loop["delta_ms"] < 0
    for side in ("before", "after"):
        report = json.loads((out / side / "report.json").read_text(encoding="utf-8"))
        check_schema(report)
        assert report["source"]["kind"] == "trace" and report["steps_profiled"] == 6
    assert json.loads((out / "after" / "report.json").read_text(encoding="utf-8"))["loader_workers"] is None  # 4 workers: not told


# -- HolisticTraceAnalysis' NCCL traces ---------------------------------------------------------------------
def test_two_ranks_of_a_128_rank_nccl_job(tmp_path: Path) -> None:
    """The folder of two sampled ranks: both analysed, the job's 128 ranks from ``distributedInfo`` with the 126
    missing named, NCCL's kernels as the collectives' flight and the ranks' wait counted as communication."""
    files = sorted(PAIR.iterdir())
    assert [f.name for f in files] == ["sampled_rank-0.json.gz", "sampled_rank-1.json.gz"]
    run = analyze_trace(PAIR, out_dir=tmp_path / "run")
    assert sorted(PAIR.iterdir()) == files  # nothing written beside the traces
    report = run.report
    assert report is not None
    check_schema(report)
    traces = {load(f)["distributedInfo"]["rank"]: load(f) for f in files}
    info = traces[0]["distributedInfo"]
    ranks = report["ranks"]
    assert ranks["launcher"] == "trace"
    assert (ranks["world_size"], ranks["backend"]) == (info["world_size"], info["backend"]) == (128, "nccl")
    assert ranks["covered"] == [0, 1] and [r["rank"] for r in ranks["per_rank"]] == [0, 1]
    assert any("126 of 128 ranks" in w and "ranks 2, 3, 4" in w for w in report["warnings"])
    for entry in ranks["per_rank"]:
        events = complete(traces[entry["rank"]])
        steps = steps_of(events)
        assert entry["steps_profiled"] == len(steps) == 2
        assert entry["step_times_ms"] == pytest.approx([(high - low) / 1000 for low, high in steps], abs=1e-3)
        comms = entry["communication"]
        flight = [covered([(e["ts"], e["ts"] + e["dur"]) for e in events if is_nccl_kernel(e)], low, high) for low, high in steps]
        assert comms["source"] == "nccl kernels"
        assert comms["in_flight_ms"] == pytest.approx(sum(flight) / len(steps) / 1000, abs=1e-3) and comms["in_flight_ms"] > 100
        started = [e for e in events if is_nccl_kernel(e) and any(low <= e["ts"] < high for low, high in steps)]
        assert comms["collectives_per_step"] == len(started) / len(steps)
        assert entry["breakdown"]["communication"] > 0 and 0 < comms["wait_ms"] < comms["in_flight_ms"]
        own = json.loads(Path(entry["report"]).read_text(encoding="utf-8"))
        assert own["source"]["rank"] == entry["rank"]
        assert own["gpu_busy"]["per_step"] == pytest.approx(per_step(events, is_gpu), abs=1e-3)


def test_one_rank_of_an_nccl_job_without_stacks(tmp_path: Path) -> None:
    """Rank 0 of a 2-rank DDP job on A100s, no ``with_stack``: DDP's backward runs on the autograd thread (lent to
    the stepping thread), so compute dominates; the NCCL kernels fill well under 10% of the steps, so the plugin's
    communication rule (TTR403) does not fire."""
    trace = load(NCCL)
    events = complete(trace)
    steps = steps_of(events)
    run = analyze_trace(NCCL, out_dir=tmp_path / "run")
    report = run.report
    assert report is not None
    check_schema(report)
    assert report["steps_profiled"] == len(steps) == 3 and report["source"]["rank"] == trace["distributedInfo"]["rank"] == 0
    assert report["device_name"] == trace["deviceProperties"][0]["name"] == "NVIDIA A100-PG509-200"
    assert report["gpu_busy"]["per_step"] == pytest.approx(per_step(events, is_gpu), abs=1e-3)

    main = next((e["pid"], e["tid"]) for e in events if e["name"].startswith("ProfilerStep#"))
    cpu = [e for e in events if e.get("cat") in ("cpu_op", "cuda_runtime")]
    threads = {(e["pid"], e["tid"]) for e in cpu}
    assert len(threads) >= 2 and main in threads  # the stepping thread and the autograd engine's
    untraced = 1 - over_steps(events, lambda e: e.get("cat") in ("cpu_op", "cuda_runtime") and (e["pid"], e["tid"]) in threads)
    nccl = over_steps(events, is_nccl_kernel)
    enqueue = over_steps(events, lambda e: e.get("cat") == "cpu_op" and e["name"].startswith(("c10d::", "record_param_comms")))
    assert untraced < 0.30 and nccl < 0.10 and not any(e["name"].startswith("enumerate(DataLoader)") for e in events)
    assert report["bottleneck"]["kind"] == "compute"
    breakdown = report["breakdown"]
    assert breakdown["python_overhead"] <= untraced + 1e-3 and breakdown["data_loading"] == 0
    assert enqueue - 1e-3 <= breakdown["communication"] <= nccl + enqueue
    assert "TTR403" not in codes(report)
    assert any("no Python frames" in w for w in report["warnings"])
    # ...but the GPU is busy under half the step: the ops' time is the host's, and the advice leads with that,
    # not with faster kernels; no attention op ran, so no attention advice
    busy = over_steps(events, is_gpu)
    assert busy < 0.5 and report["gpu_busy"]["share"] == pytest.approx(busy, abs=1e-3)
    actions = [r["action"] for r in report["bottleneck"]["recommendations"]]
    assert actions[0].startswith("Find what the host runs while the GPU idles"), actions
    assert actions.index("Train in bf16 autocast") > 1
    assert any(f"busy only {busy * 100:.0f}%" in e["text"] for e in report["bottleneck"]["evidence"])
    has_attention = any(w in e["name"].lower() for e in events if e.get("cat") == "cpu_op" for w in ("softmax", "attention"))
    assert ("Use scaled_dot_product_attention for attention" in actions) == has_attention
