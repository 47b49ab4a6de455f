"""DDP settings seen at runtime, and the hints they call for.

The agent records each ``DistributedDataParallel``'s arguments, DDP's own
logging data (bucket sizes, unused parameters) and the forwards of each step
(``agent/ranks.py``, agent.json ``meta.ddp``); the rank's profile gives the
all-reduces per step and the communication figures (``comms.py``).  Hints:

* ``no_sync``: several forwards (micro-batches) per optimizer step and none of
  them under ``no_sync()``: every micro-batch all-reduces its gradients;
* ``find_unused_parameters``: ``True`` but no parameter went unused (DDP
  searches the autograd graph after every forward for nothing);
* ``static_graph``: parameters do go unused: if always the same ones,
  ``static_graph=True`` skips the per-step search;
* ``bucket_cap_mb``: communication is a real share of the step and either all
  gradients sit in one bucket (the all-reduce can only start once backward is
  done) or there are very many small buckets (per-call latency).
"""

from __future__ import annotations

import statistics
from typing import Any, Optional

from .comms import RankComms

COMM_HINT_SHARE = 0.10  # communication share of the step from which bucket advice is worth its measurement
MANY_BUCKETS = 40
MIB = 2**20


def ddp_facts(meta_ddp: Optional[dict[str, Any]], comms: RankComms) -> list[dict[str, Any]]:
    """report.json ``ranks.ddp``: one entry per DDP model the rank built."""
    if not meta_ddp:
        return []
    steps = list(meta_ddp.get("steps") or [])[1:] or list(meta_ddp.get("steps") or [])  # the first counts from the start
    forwards = _median([s.get("forwards", 0) for s in steps])
    unsynced = _median([s.get("no_sync_forwards", 0) for s in steps])
    out = []
    for model in meta_ddp.get("models") or []:
        if "error" in model:
            out.append({"error": str(model["error"])})
            continue
        logging = model.get("logging") or {}
        sizes = [int(x) for x in str(logging.get("bucket_sizes", "")).replace(" ", "").split(",") if x.isdigit()]
        cap = logging.get("bucket_cap_bytes")
        out.append({
            "module": model.get("module"),
            "backend": logging.get("backend_name"),
            "parameters": model.get("parameters"),
            "gradient_bytes": model.get("parameter_bytes"),
            "bucket_cap_mb": round(cap / MIB, 3) if isinstance(cap, int) else model.get("bucket_cap_mb"),
            "buckets": len(sizes) or None,
            "bucket_bytes": sizes,
            "find_unused_parameters": bool(model.get("find_unused_parameters")),
            "unused_parameter_bytes": logging.get("unused_parameter_size"),
            "static_graph": bool(model.get("static_graph")),
            "gradient_as_bucket_view": bool(model.get("gradient_as_bucket_view")),
            "forwards_per_step": forwards,
            "no_sync_forwards_per_step": unsynced,
            "allreduces_per_step": comms.allreduces_per_step,
        })
    return out


def ddp_hints(facts: list[dict[str, Any]], comms: RankComms) -> list[dict[str, Any]]:
    """Hints ``{kind, text, example}`` from the DDP facts of the shown rank."""
    hints = []
    for model in facts:
        if "error" in model:
            continue
        forwards, unsynced = model["forwards_per_step"], model["no_sync_forwards_per_step"]
        if forwards >= 2 and unsynced == 0:
            k = int(round(forwards))
            hints.append({
                "kind": "no_sync",
                "text": (
                    f"{k} forwards (micro-batches) per optimizer step, none under no_sync(): each one all-reduces its "
                    f"gradients ({model['allreduces_per_step']:g} all-reduces per step); {k - 1} of every {k} are wasted "
                    f"(communication is {comms.share * 100:.0f}% of this rank's step)"
                ),
                "example": "ctx = model.no_sync() if (i + 1) % accumulate else contextlib.nullcontext()\nwith ctx:\n    loss.backward()",
            })
        unused = model.get("unused_parameter_bytes")
        if model["find_unused_parameters"] and unused == 0:
            hints.append({
                "kind": "find_unused_parameters",
                "text": (
                    "find_unused_parameters=True, but no parameter went unused: DDP walks the autograd graph after every "
                    "forward looking for them; pass find_unused_parameters=False"
                ),
                "example": "model = DistributedDataParallel(net, find_unused_parameters=False)",
            })
        elif model["find_unused_parameters"] and unused and not model["static_graph"]:
            hints.append({
                "kind": "static_graph",
                "text": (
                    f"{unused:,} bytes of parameters get no gradient, so find_unused_parameters=True is needed; if the same "
                    "ones go unused every step, static_graph=True lets DDP skip the per-step search"
                ),
                "example": "model = DistributedDataParallel(net, find_unused_parameters=True, static_graph=True)",
            })
        hint = _bucket_hint(model, comms)
        if hint:
            hints.append(hint)
    return hints


def _bucket_hint(model: dict[str, Any], comms: RankComms) -> Optional[dict[str, Any]]:
    buckets, cap = model.get("buckets"), model.get("bucket_cap_mb")
    if not buckets or cap is None or comms.share < COMM_HINT_SHARE:
        return None
    total_mb = (model.get("gradient_bytes") or 0) / MIB
    if buckets == 1 and total_mb > 2.0 and (comms.overlap is None or comms.overlap < 0.5):
        suggested = max(1, int(total_mb / 4))
        return {
            "kind": "bucket_cap_mb",
            "text": (
                f"all {total_mb:.1f} MiB of gradients sit in one bucket (bucket_cap_mb {cap:g}): the all-reduce starts only "
                f"when backward is done, so it cannot overlap it; smaller buckets start reducing while backward runs"
            ),
            "example": f"model = DistributedDataParallel(net, bucket_cap_mb={suggested})",
        }
    if buckets >= MANY_BUCKETS:
        return {
            "kind": "bucket_cap_mb",
            "text": (
                f"{buckets} buckets of at most {cap:g} MiB: each is a separate all-reduce with its own latency; "
                "larger buckets mean fewer calls"
            ),
            "example": f"model = DistributedDataParallel(net, bucket_cap_mb={int(cap * 4)})",
        }
    return None


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0
