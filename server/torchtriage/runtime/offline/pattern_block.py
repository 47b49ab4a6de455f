"""What the pattern watch found, handed on: agent.json's ``shapes`` and ``device_facts``, and ``trace_patterns``.

``add_patterns(raw, extra, header, scan, sweep)`` (called by ``analyze``
before ``build_profile``) adds to the agent.json-shaped record

* ``shapes``: the matmul / convolution signatures (``wire.ShapeStat``, on the
  sweep's chains), so the Tensor-Core findings and report.json's
  ``matmul_shapes`` work on a trace as on a profiled run;
* ``device_facts`` (a trace with ``deviceProperties`` only): the GPU's compute
  capability and memory from the header, the allocated peak from the
  ``[memory]`` events, and the TF32 setting *inferred*: a trace does not
  record ``torch.backends.cuda.matmul.allow_tf32``, so it counts as on when a
  fp32 matmul ran a TF32 Tensor-Core kernel (a warning says so);

and to the profile's ``extra`` the block ``trace_patterns`` that
``results.trace_patterns.TraceFacts`` reads: each pattern found, on the
innermost user line of its chain ("" and 0 without Python frames), with its
host and GPU time summed over the recorded steps (microseconds), plus the
facts the Overview rules need (GPU devices, collective backend, capability,
memory).
"""

from __future__ import annotations

from typing import Any, Optional

from ..agent.wire import DeviceFacts, ShapeStat
from .events import PY, TraceScan
from .pattern_nodes import Agg
from .sweep import Sweep

MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
TF32_INFERRED = ("the TF32 setting is read from the fp32 matmul kernels' names (a trace does not record "
                 "torch.backends.cuda.matmul.allow_tf32): TF32 counts as on only when one ran a TF32 Tensor-Core kernel")


def _sites(sweep: Sweep) -> dict[int, tuple[str, int, str]]:
    """site id -> (path, line, function), provisional sites where ``place_pending`` put them."""
    tables = sweep.tables
    out = {}
    for key, site in tables.sites.items():
        out[site] = tables.placed[site] if site in tables.placed else (key[1], key[2], key[3])
    return out


def _innermost(sweep: Sweep) -> dict[int, tuple[str, int, str]]:
    """chain id -> the innermost user site of the chain."""
    sites = _sites(sweep)
    return {cid: sites[chain[-1]] for chain, cid in sweep.tables.chains.items() if chain and chain[-1] in sites}


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def _device(header: dict[str, Any]) -> Optional[dict[str, Any]]:
    props = header.get("deviceProperties")
    return props[0] if isinstance(props, list) and props and isinstance(props[0], dict) else None


def _int(value: Any, default: int = -1) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def shape_records(shapes: dict[tuple[str, str, str, int], Agg]) -> list[ShapeStat]:
    return [ShapeStat(op, dtype, dims, agg.count, agg.ns, agg.gpu, chain, -1)
            for (op, dtype, dims, chain), agg in shapes.items() if agg.count]


def device_record(header: dict[str, Any], sweep: Sweep) -> Optional[DeviceFacts]:
    """The ``device_facts`` record of a CUDA trace (None without ``deviceProperties``)."""
    props = _device(header)
    if props is None:
        return None
    fp32 = [agg for (op, dtype, _, _), agg in sweep.watch.shapes.items() if op in MATMULS and dtype == "float32"]
    tf32 = any(agg.tc > 0 for agg in fp32)
    peak = max((a.total_allocated for a in sweep.allocs if a.device == "cuda"), default=0)
    return DeviceFacts("high" if tf32 else "highest", tf32, True, _int(props.get("computeMajor")), _int(props.get("computeMinor"), 0),
                       0, max(0, peak), 0, max(0, _int(props.get("totalGlobalMem"), 0)), "")


def pattern_block(header: dict[str, Any], scan: TraceScan, sweep: Sweep) -> dict[str, Any]:
    """report's ``extra["trace_patterns"]``: the patterns found, each on its line, and the Overview rules' facts."""
    watch = sweep.watch
    where = _innermost(sweep)
    patterns = []
    for (kind, chain), agg in watch.hits.items():
        if not agg.count and not agg.ns:
            continue
        path, line, function = where.get(chain, ("", 0, ""))
        patterns.append({"kind": kind, "path": path, "line": line, "function": function, "us": _us(agg.ns),
                         "gpu_us": _us(agg.gpu), "count": agg.count, "steps": len(agg.steps), "details": dict(agg.details)})
    patterns.sort(key=lambda p: (-(p["us"] + p["gpu_us"]), p["kind"], p["path"], p["line"]))
    pids = {pid for (pid, _), number in scan.threads.items() if number in watch.gpu_threads}
    info = header.get("distributedInfo") if isinstance(header.get("distributedInfo"), dict) else {}
    props = _device(header) or {}
    return {
        "patterns": patterns,
        "gpu_devices": len(pids),
        "backend": str(info.get("backend") or ""),
        "backends_seen": sorted(watch.backends),
        "capability": [_int(props.get("computeMajor")), _int(props.get("computeMinor"), 0)] if props else None,
        "with_stack": bool(scan.counts[PY]),
        "record_shapes": any(k[2] for k in watch.shapes),
    }


def add_patterns(raw: dict[str, Any], extra: dict[str, Any], header: dict[str, Any], scan: TraceScan, sweep: Sweep) -> None:
    """Add ``shapes`` and ``device_facts`` to ``raw`` and ``trace_patterns`` to ``extra`` (see the module doc)."""
    sweep.watch.finish()
    raw["shapes"] = shape_records(sweep.watch.shapes)
    facts = device_record(header, sweep)
    if facts is not None:
        raw["device_facts"] = [facts]
        if facts.capability_major >= 8 and any(op in MATMULS and dtype == "float32" for op, dtype, _, _ in sweep.watch.shapes):
            raw.setdefault("warnings", []).append(TF32_INFERRED)
    extra["trace_patterns"] = pattern_block(header, scan, sweep)
