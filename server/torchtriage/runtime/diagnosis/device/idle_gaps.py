"""GPU idle gaps (CUDA): the largest spans between kernels, and what the CPU was doing in each.

The agent (``agent/gaps.py``) finds the largest idle spans on the GPU
timeline inside the recorded steps and looks up the main thread's frame in
each.  Here they become ``GpuGap`` s (a probe that only knew the user
function gets its line from the frame samples taken inside the gap), evidence
on the verdict whose category the gap's line belongs to (the primary verdict
for the rest), and TTR604 ``runtime-gpu-idle-gap`` on a line where the GPU
waits at least ``GAP_LINE_SHARE`` of the step and no static finding or
measured sync already names the cause.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Sequence

from ....findings import Finding
from ..crosslink import covers
from ...results.device_facts import GpuGap
from ...results.profile_data import ProfileData
from .constructor import device_finding
from ...results.verdicts import Evidence, Hotspot, Recommendation

GAP_LINE_SHARE = 0.05  # gap time at one line, as a share of the step, worth a finding
EVIDENCE_GAPS = 3
SYNC_EVENTS = ("aten::_local_scalar_dense", "aten::item", "aten::nonzero", "cudaStreamSynchronize", "cudaDeviceSynchronize",
               "cudaEventSynchronize", "cuda_sync", "cudaMemcpy", "cudaMemcpyAsync")



def _where(path: str, line: int) -> str:
    return f"{Path(path).name}:{line}" if path else "outside your code"


def gap_text(gap: GpuGap) -> str:
    doing = f" in {gap.cpu}" if gap.cpu else ""
    place = _where(gap.path, gap.line) + ("" if gap.exact or not gap.path else f" (function {gap.function})")
    return (f"GPU idle {gap.duration_us / 1000:.2f} ms in step {gap.step} while the main thread was at {place}{doing} "
            f"({gap.probes} of 5 probes), before {gap.next_kernel or 'the next kernel'}")


def _category(gap: GpuGap, spots: Sequence[Hotspot]) -> str:
    for spot in spots:
        if spot.path == gap.path and spot.line == gap.line:
            return "python_overhead" if spot.category == "compute" and not gap.cpu.startswith(("aten::", "cuda")) else spot.category
    return ""


def gap_evidence(profile: ProfileData, spots: Sequence[Hotspot], kinds: Sequence[str]) -> dict[str, list[Evidence]]:
    """Verdict kind -> evidence: the GPU's idle share, then the largest gaps, each on the verdict of its line's
    category (``kinds[0]``, the primary verdict, gets the others)."""
    if profile.device != "cuda" or not profile.gpu_gaps or not kinds:
        return {}
    window = sum(s.duration_us for s in profile.steps)
    busy = float(profile.extra.get("gpu_busy_us") or 0.0)
    out: dict[str, list[Evidence]] = defaultdict(list)
    if window > 0 and busy:
        n = max(1, profile.steps_profiled)
        out[kinds[0]].append(Evidence(
            f"The GPU is idle {max(0.0, window - busy) / n / 1000:.2f} ms of each {window / n / 1000:.2f} ms step "
            f"({max(0.0, 1 - busy / window) * 100:.0f}%); the largest gaps between kernels follow"))
    for gap in profile.gpu_gaps[:EVIDENCE_GAPS]:
        kind = _category(gap, spots)
        out[kind if kind in kinds else kinds[0]].append(Evidence(gap_text(gap), gap.path, gap.line))
    return dict(out)


def _advice(gaps: Sequence[GpuGap]) -> list[Recommendation]:
    events = {g.cpu for g in gaps}
    if events & set(SYNC_EVENTS):
        return [Recommendation(
            "Remove the sync from the step: keep the value on the device and read it every N steps",
            "While the CPU waits for a value from the GPU it launches nothing, so the GPU runs dry as soon as the queue is done.",
            "running += loss.detach()\nif step % 100 == 0:\n    print((running / 100).item())",
        )]
    return [
        Recommendation(
            "Move this CPU work off the step, or batch it into fewer, larger tensor ops",
            "The GPU only runs what the CPU has queued; Python work between launches leaves it idle once the queue drains.",
        ),
        Recommendation(
            "Compile the step (torch.compile, mode='reduce-overhead' for CUDA graphs)",
            "Fewer, fused kernels and graph replay let the CPU stay ahead of the GPU.",
            "model = torch.compile(model, mode='reduce-overhead')",
        ),
    ]


def gap_findings(profile: ProfileData, findings: Sequence[Finding]) -> list[Finding]:
    """TTR604 per line where the largest gaps add up to ``GAP_LINE_SHARE`` of the step, unless already explained."""
    if profile.device != "cuda" or not profile.gpu_gaps:
        return []
    window = sum(s.duration_us for s in profile.steps)
    n = max(1, profile.steps_profiled)
    synced = {(s.path, s.line) for s in profile.sync_points}
    by_line: dict[tuple[str, int], list[GpuGap]] = defaultdict(list)
    for gap in profile.gpu_gaps:
        if gap.path:
            by_line[(gap.path, gap.line)].append(gap)
    out = []
    for (path, line), gaps in by_line.items():
        idle = sum(g.duration_us for g in gaps)
        share = min(1.0, idle / window) if window > 0 else 0.0
        if share < GAP_LINE_SHARE or (path, line) in synced or any(covers(f, path, line, profile.cwd) for f in findings):
            continue
        doing = Counter(g.cpu for g in gaps).most_common(1)[0][0]
        message = (
            f"the GPU sits idle at least {idle / n / 1000:.2f} ms per step ({share * 100:.0f}%) while the CPU runs this line"
            + (f" ({doing})" if doing else "") + f": {_advice(gaps)[0].action[0].lower() + _advice(gaps)[0].action[1:]}"
        )
        evidence = [Evidence(gap_text(g), g.path, g.line) for g in gaps[:EVIDENCE_GAPS]]
        out.append(device_finding("TTR604", path, line, message, share, idle / n, evidence, _advice(gaps)))
    return out


def gaps_json(profile: ProfileData, source: Any) -> list[dict[str, Any]]:
    """report.json's ``gpu_idle_gaps``: the largest idle spans, longest first."""
    return [
        {
            "step": g.step,
            "start_ms": round(g.start_us / 1000.0, 4),
            "duration_ms": round(g.duration_us / 1000.0, 4),
            "path": g.path or None,
            "line": g.line or None,
            "function": g.function,
            "source": source.get(g.path, g.line) if g.path else "",
            "exact_line": g.exact,
            "cpu": g.cpu,
            "probes": g.probes,
            "next_kernel": g.next_kernel,
        }
        for g in profile.gpu_gaps
    ]
