"""The profiles recorded on a GPU (``tests/data/runtime/cuda/``, see its README) and what both the recorded
and the live-GPU tests check on a profile of one of the examples.

Each check takes a ``ProfileData`` built by this checkout's host code and the script as it ran, so the
same assertions hold a recorded H100 run (in CI, no GPU) and a fresh one (``-m cuda`` on a GPU machine).
"""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any, Optional

from torchtriage.runtime.attribution.lines import build_profile
from torchtriage.runtime.diagnosis.bottleneck import MENTION_BARS, VERDICT_BARS, diagnose
from torchtriage.runtime.results.profile_data import ProfileData
from torchtriage.runtime.trace import Trace, load_trace

CASES = Path(__file__).resolve().parents[2] / "data" / "runtime" / "cuda"
MIB = 1024 * 1024

# big_matmul.py on a GPU: Linear(1024, 4096) -> GELU -> Linear(4096, 1024) on a batch of 8192, fp32, SGD.
BIG_MATMUL_PARAMS = (1024 * 4096 + 4096 + 4096 * 1024 + 1024) * 4
BIG_MATMUL_INPUTS = 2 * 8192 * 1024 * 4  # data and target
BIG_MATMUL_SAVED = 2 * 8192 * 4096 * 4  # the first layer's output and GELU's, kept for backward
# At the backward's peak, besides those: the gradients (one per parameter), the output, its gradient and
# the loss's difference (each batch x 1024), and the hidden's gradient before and after GELU (each batch x 4096).
BIG_MATMUL_BACKWARD = BIG_MATMUL_PARAMS + 3 * 8192 * 1024 * 4 + 2 * 8192 * 4096 * 4
# Matrix products a step: 2 forward; backward, both weight gradients and the second layer's input gradient.
BIG_MATMUL_GEMMS = 5
# eval_no_grad.py: each batch's kept loss holds its graph, whose saved tensors are the batch's input
# (64 x 256) and the hidden activation (64 x 1024), in fp32.
EVAL_KEPT_PER_BATCH = (64 * 256 + 64 * 1024) * 4
# graph_leak.py: each step keeps its logits (128 x 64, fp32) and targets (128, int64) for the epoch's accuracy,
# and its loss (a scalar: one 512-byte block of the CUDA caching allocator, 4 bytes on the CPU).
GRAPH_LEAK_KEPT_PER_STEP = 128 * 64 * 4 + 128 * 8


def cases() -> dict[str, dict[str, Any]]:
    return json.loads((CASES / "cases.json").read_text(encoding="utf-8"))


def clocks() -> dict[str, dict[str, Any]]:
    return json.loads((CASES / "clocks.json").read_text(encoding="utf-8"))


def case_report(case: str) -> dict[str, Any]:
    """The case's report.json (the magic's is kept compressed: report.json.gz)."""
    folder = CASES / case
    if (folder / "report.json.gz").exists():
        with gzip.open(folder / "report.json.gz", "rt", encoding="utf-8") as handle:
            return json.load(handle)
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


def recorded(case: str) -> tuple[ProfileData, Path, Optional[Trace]]:
    """The case's profile rebuilt from what the agent recorded on the GPU, its script, and its full trace if kept."""
    folder = CASES / case
    with gzip.open(folder / "agent.json.gz", "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    trace_path = folder / "trace.json.gz"
    extra = {"trace": str(trace_path)} if trace_path.exists() else {}
    return build_profile(raw, extra=extra), folder / "script.py", (load_trace(trace_path) if trace_path.exists() else None)


def line_of(script: Path, text: str) -> int:
    """The one line of SCRIPT that holds TEXT."""
    found = [n for n, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


def verdict(profile: ProfileData) -> str:
    return diagnose(profile).bottleneck.kind


def mean_step_ms(profile: ProfileData) -> float:
    return statistics.fmean(s.duration_us for s in profile.steps) / 1000.0


def median_growth(profile: ProfileData) -> float:
    """The median change of end-of-step allocated bytes from one recorded step to the next."""
    ends = [m.end_bytes for m in profile.memory_steps]
    return statistics.median(b - a for a, b in zip(ends, ends[1:]))


def check_big_matmul(profile: ProfileData, script: Path) -> None:
    """GPU-bound: the step lasts as long as its kernels; the forward matmuls are on the line that called the model."""
    assert profile.device == "cuda" and profile.device_name.startswith("NVIDIA")
    assert verdict(profile) == "compute"
    busy_ms = profile.extra["gpu_busy_us"] / len(profile.steps) / 1000.0
    assert 0.8 * mean_step_ms(profile) <= busy_ms <= 1.05 * mean_step_ms(profile)
    forward, backward = line_of(script, "out = model(data)"), line_of(script, "loss.backward()")
    gemm_lines = {c.line for c in profile.lines if c.category == "compute" and any("gemm" in n for n in c.top_names)}
    assert {forward, backward} <= gemm_lines, gemm_lines  # backward's GEMMs come from the autograd engine's thread
    peaks = [m.peak_bytes for m in profile.memory_steps]
    ends = [m.end_bytes for m in profile.memory_steps]
    assert len(set(ends)) == 1, "each step frees what it allocates"
    floor = BIG_MATMUL_PARAMS + BIG_MATMUL_INPUTS + BIG_MATMUL_SAVED
    assert floor <= min(peaks) <= max(peaks) <= floor + BIG_MATMUL_BACKWARD
    # the allocations of the autograd engine's thread count too: the peak is the trace's (an older agent
    # missed them and read 577 MiB against the trace's 721 MiB on the H100)
    trace_peak = max(trace_memory(profile.extra["trace"])) if profile.extra.get("trace") else None
    assert trace_peak is None or max(peaks) == trace_peak


def check_sync_lines(profile: ProfileData, script: Path) -> None:
    """Three stream synchronisations a step (``if loss.isnan()``, ``.item()``, ``print(loss)``), found at the
    ``.item()`` and ``print`` lines.  The ``if`` reaches the sync through ``Tensor.__bool__``, with no Python
    call for the tree to name its line: the frame samples place it, not always on its own line."""
    item = line_of(script, "running += loss.item()")
    printed = line_of(script, 'print(f"step {step} loss {loss}")')
    steps = len(profile.steps)
    stream = {p.line: p for p in profile.sync_points if p.kind == "stream_sync"}
    assert item in stream and printed in stream, sorted(stream)
    assert stream[printed].count == steps and stream[item].count >= steps
    assert sum(p.count for p in stream.values()) == 3 * steps
    assert all(p.stall_us > 0 for p in (stream[item], stream[printed]))


def check_eval_growth(profile: ProfileData) -> None:
    """The evaluation loop that keeps each batch's loss grows by that batch's saved tensors a step."""
    assert verdict(profile) == "memory_growth"
    growth = median_growth(profile)
    assert EVAL_KEPT_PER_BATCH <= growth <= 1.25 * EVAL_KEPT_PER_BATCH, growth


def check_tiny_ops(profile: ProfileData) -> None:
    """200 tiny layers: thousands of kernels a step, each far shorter than its launch: launch overhead."""
    assert profile.kernels_per_step > 2000
    assert profile.extra["gpu_busy_us"] / len(profile.steps) < 0.2 * mean_step_ms(profile) * 1000.0
    assert verdict(profile) == "launch_overhead"


def check_graph_leak(profile: ProfileData) -> None:
    """Every step keeps its logits, targets and loss: memory grows by them, and that is the verdict."""
    assert verdict(profile) == "memory_growth"
    growth = median_growth(profile)
    assert GRAPH_LEAK_KEPT_PER_STEP <= growth <= GRAPH_LEAK_KEPT_PER_STEP + 512, growth


def check_blocking_copies(profile: ProfileData, script: Path) -> None:
    """A blocking copy from pageable memory waits for the stream: a sync a step at each ``.to(device)`` line."""
    moves = ("images = images.to(device)", "targets = targets.to(device)", "noise = torch.zeros(images.shape).to(device)")
    lines = [line_of(script, text) for text in moves]
    stream = {p.line: p for p in profile.sync_points if p.kind == "stream_sync"}
    assert set(lines) <= set(stream), sorted(stream)
    assert all(stream[line].count >= len(profile.steps) for line in lines)


def trace_memory(path: str) -> list[int]:
    """The GPU's allocated bytes at each ``[memory]`` event of a trace inside its recorded steps."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        events = json.load(handle)["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X" and e.get("cat") == "user_annotation"]
    first, last = min(s for s, _ in steps), max(e for _, e in steps)
    return [int(e["args"]["Total Allocated"]) for e in events
            if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1 and first <= e["ts"] <= last]


def check_sync_cost(profile: ProfileData) -> None:
    """Syncs every step on a GPU that is busy most of the step: the CPU waits long in them, but only the GPU's
    idle time could be won back, so host_sync is at most that and the rest of the wait is compute.  host_sync
    is the verdict when that share passes its bar (the H100: 20 %), else a secondary verdict (the H200, whose
    kernels ran faster: 14 %)."""
    n = len(profile.steps)
    busy_ms = profile.extra["gpu_busy_us"] / n / 1000.0
    waited_ms = sum(p.stall_us for p in profile.sync_points if p.kind == "stream_sync") / n / 1000.0
    host_sync_ms = profile.category_us["host_sync"] / n / 1000.0
    idle_ms = mean_step_ms(profile) - busy_ms
    assert waited_ms > 2 * idle_ms  # the waits were mostly the GPU running the step's queued kernels
    assert 0 < host_sync_ms <= idle_ms + 0.01
    assert profile.extra["sync_wait_on_busy_gpu_us"] > 0
    diagnosis = diagnose(profile)
    share = profile.category_us["host_sync"] / sum(s.duration_us for s in profile.steps)
    if share >= dict(VERDICT_BARS)["host_sync"]:
        assert diagnosis.bottleneck.kind == "host_sync"
    else:
        assert share >= MENTION_BARS["host_sync"] and "host_sync" in [v.kind for v in diagnosis.secondary]
