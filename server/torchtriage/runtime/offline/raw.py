"""The agent.json-shaped record of an analysed trace: the sweep's records, a ``meta`` block and warnings.

``build_profile`` (``attribution/lines.py``) then turns it into a ``ProfileData``
exactly as it does for a profiled run.  What a trace cannot tell stays empty
(frame samples, DataLoader workers but num_workers=0, which the loader's
iterator tells, the interpreter's versions and math settings), and the
warnings say what that costs the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..agent.wire import WIRE_VERSION
from .events import GPU, MEM, PY, TraceScan
from .frames import CodeMap
from .inputs import Choice, header_rank
from .steps import WHOLE_TRACE
from .sweep import Sweep

NO_STACK = ("the trace has no Python frames (recorded without with_stack=True): no source lines; the stepping thread's time "
            "between ops counts as Python overhead. Record with torch.profiler.profile(..., with_stack=True) for lines")


def device_name(header: dict[str, Any]) -> str:
    props = header.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict):
        return str(props[0].get("name", ""))
    return ""


def trace_warnings(header: dict[str, Any], scan: TraceScan, sweep: Sweep, code: CodeMap) -> list[str]:
    """What the trace lacked or the analysis had to guess."""
    warnings = []
    if not scan.counts[PY] and not scan.call_stacks:
        warnings.append(NO_STACK)
    elif sweep.function_level:
        missing = sorted(code.missing)
        why = (f"{len(missing)} user file(s) the trace names are not on this machine ({', '.join(missing[:3])})" if missing
               else "the calling line was not one line of the function's source")
        warnings.append(
            f"{sweep.function_level} call site(s) in user functions are shown on the function's def line: a trace's Python "
            f"frames name functions, not calling lines, and {why}"
        )
    if scan.counts[GPU] and not device_name(header):
        warnings.append("the trace has GPU activity but no deviceProperties: the GPU's name and memory are unknown")
    if sweep.device.unlinked:
        warnings.append(f"{sweep.device.unlinked} GPU activities in the recorded steps had no launch in the trace (queued before "
                        "recording began?): each counts in the step it ran in, on no line")
    if sweep.memory_sums:
        warnings.append("the trace's [memory] events carry no allocator total (torch 1.9): the memory curve counts the bytes "
                        "allocated since recording began, not what was allocated before it (the weights, the optimizer state)")
    if scan.skipped:
        warnings.append(f"{scan.skipped} events had no usable time or were not objects and were skipped")
    if sweep.clamped:
        warnings.append(f"{sweep.clamped} events ended after the event enclosing them on their thread and were cut to its end")
    return warnings


def raw_record(header: dict[str, Any], scan: TraceScan, sweep: Sweep, code: CodeMap, choice: Choice,
               step_warnings: list[str], cwd: Optional[Path] = None) -> dict[str, Any]:
    """agent.json's content for the trace (``wire`` records, as the agent's ``Collector.result`` gives them)."""
    gpu = bool(scan.counts[GPU])
    memory_devices = {a.device for a in sweep.allocs}
    device = "cuda" if gpu or "cuda" in memory_devices else "cpu"
    meta = {
        "script": sweep.script,
        "argv": [],
        "cwd": str(cwd or Path.cwd()),
        "device": device,
        "device_name": device_name(header),
        "torch_version": "",
        "python": "",
        "step_detection": "whole_trace" if WHOLE_TRACE in step_warnings else "profiler_step",
        "user_roots": [],
    }
    iterators = {agg.details.get("iterator") for (kind, _), agg in sweep.watch.hits.items() if kind == "loader"}
    if iterators == {"_SingleProcessDataLoaderIter"}:  # the loop's DataLoader loads in this process: num_workers=0
        meta["loader_workers"] = 0
    warnings = list(choice.warnings) + list(step_warnings) + trace_warnings(header, scan, sweep, code)
    raw: dict[str, Any] = {"wire_version": WIRE_VERSION, "meta": meta, "warnings": warnings,
                           "status": {"status": "completed", "message": f"analysed from {choice.path}"}}
    raw.update(sweep.result())
    return raw


def source_block(header: dict[str, Any], scan: TraceScan, choice: Choice) -> dict[str, Any]:
    """report.json's ``source``: the trace analysed and what it held."""
    rank = header_rank(header)
    return {
        "kind": "trace",
        "path": str(Path(choice.path).resolve()),
        "rank": rank if rank is not None else choice.rank,
        "other_traces": choice.others,
        "events": scan.events,
        "python_frames": bool(scan.counts[PY]),
        "memory_events": bool(scan.counts[MEM]),
        "gpu_activities": scan.counts[GPU],
    }


def gpu_busy_block(sweep: Sweep) -> Optional[dict[str, Any]]:
    """report.json's ``gpu_busy`` (None without GPU activity): the union of GPU activity inside each step's range."""
    if not sweep.device.gpu:
        return None
    steps = sweep.clock.steps
    total = sum(s.end_ns - s.start_ns for s in steps)
    return {
        "share": round(sum(sweep.device.busy_ns) / total, 5) if total else 0.0,
        "per_step": [round(x, 5) for x in sweep.device.busy_shares()],
        "busy_ms_per_step": [round(ns / 1e6, 4) for ns in sweep.device.busy_ns],
    }
