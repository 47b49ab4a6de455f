"""Where the peak's memory goes: parameters, gradients, optimizer state, activations, other.

The attribution (``attribution/memory.py``: ``decompose``) replays the allocations the profile recorded (``Alloc``, device
of the run) up to the peak of the last recorded step (the event with the most
live memory in it): the agent read the training state at that step's end, so
its gradients, allocated again every step, are the ones live there.  Each
allocation still live at that peak is

* a parameter, gradient or optimizer-state storage when its address is one
  the agent read from the optimizers at the end of the window (``Held``) and
  it was never freed after the peak;
* an *activation* when it was allocated during the peak's step, on a line
  that is not the optimizer's (tensors saved for backward and temporaries);
* *other* otherwise (earlier steps' tensors, the optimizer step's temporaries).

Storages allocated before the window never appear as allocations: the held
ones are added as what they are; on CUDA, where the allocator reports the
true live total, the rest of it is *other*.  On the CPU the profiler knows
only allocations it saw, so memory allocated before the window that is not
the training state (a dataset in memory) is not counted.

Then ``memory_findings``: TTR701 ``runtime-memory-shape`` when optimizer state
or activations are the largest part, at least ``DOMINANT_SHARE`` of a peak of
at least ``MIN_PEAK_BYTES``, with the fixes for that part; TTR702
``runtime-memory-fragmentation`` on CUDA when the allocator reserved far more
than it ever handed out and ``expandable_segments`` is not set.  Both are
warnings when the allocator reserved ``NEAR_LIMIT`` of the GPU's memory, else
information: they matter when memory is what limits the batch or the model.
"""

from __future__ import annotations

from typing import Any, Sequence

from ....findings import Finding
from ...results.device_facts import MEMORY_COMPONENTS, MemoryShape
from ...results.profile_data import ProfileData
from .constructor import device_finding
from ...results.verdicts import Evidence, Hotspot, Recommendation

DOMINANT_SHARE = 0.35  # a part this large of the peak, and the largest, is what to shrink first
MIN_PEAK_BYTES = 64 * 2**20  # below this the peak is no concern on any device: no TTR701
NEAR_LIMIT = 0.8  # of the GPU's memory: TTR701 / TTR702 become warnings
FRAGMENTED_SHARE = 0.25  # reserved but never allocated, as a share of the reserved peak
FRAGMENTED_BYTES = 512 * 2**20
MIB = 2**20



# --- findings ------------------------------------------------------------------------------------------


def _mib(n: float) -> str:
    return f"{n / MIB:,.1f} MiB"


def _where(path: str, line: int) -> str:
    from pathlib import Path

    return f"{Path(path).name}:{line}"


def _composition(shape: MemoryShape) -> Evidence:
    parts = ", ".join(f"{c.replace('_', ' ')} {_mib(shape.components[c])} ({shape.share(c) * 100:.0f}%)" for c in MEMORY_COMPONENTS if shape.components[c])
    note = f"; other includes {_mib(shape.step_temporaries)} of the optimizer step's temporaries" if shape.step_temporaries else ""
    return Evidence(f"Live memory at the peak ({shape.device}, step {shape.peak_step}): {_mib(shape.peak_bytes)} = {parts}{note}")


def optimizer_advice(shape: MemoryShape, cuda: bool) -> list[Recommendation]:
    """Fixes for optimizer state that dominates the peak."""
    names = {o.name for o in shape.optimizers}
    state = shape.components["optimizer_state"]
    recs = []
    if names & {"Adam", "AdamW"}:
        recs.append(Recommendation(
            "Use 8-bit AdamW (bitsandbytes.optim.AdamW8bit)" + ("" if cuda else " on the GPU"),
            f"It keeps Adam's two moments in 8 bits: 2 instead of 8 bytes per parameter, about {_mib(state * 0.75)} less here.",
            "import bitsandbytes as bnb\noptimizer = bnb.optim.AdamW8bit(model.parameters(), lr=1e-3)",
        ))
    recs.append(Recommendation(
        "Shard the optimizer state across GPUs: ZeroRedundancyOptimizer with DDP, or FSDP",
        "With N data-parallel ranks each keeps 1/N of the state (ZeRO stage 1); FSDP also shards gradients and parameters.",
        "from torch.distributed.optim import ZeroRedundancyOptimizer\n"
        "optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)",
    ))
    foreach = [o.name for o in shape.optimizers if o.implementation in ("foreach", "default")]
    if foreach:
        recs.append(Recommendation(
            f"Prefer fused=True over the foreach implementation for {', '.join(dict.fromkeys(foreach))}",
            "The foreach update builds intermediate tensor lists as large as the parameters inside step(), on top of the state; "
            "the fused kernel updates in place (and is one kernel instead of many). foreach=False saves the same memory on "
            "any device, at some speed.",
            "torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)",
        ))
    recs.append(Recommendation(
        "Or an optimizer with less state: SGD with momentum (one buffer) or Adafactor (factored second moments)",
        "Adam keeps two full-size buffers per parameter; the state shrinks with the optimizer's.",
        "torch.optim.Adafactor(model.parameters(), lr=1e-2)",
    ))
    return recs


def activation_advice(shape: MemoryShape, cuda: bool) -> list[Recommendation]:
    """Fixes for activations that dominate the peak: checkpoint where they are made."""
    where = ", ".join(_where(a.path, a.line) + f" ({_mib(a.bytes)})" for a in shape.activation_lines[:3])
    return [
        Recommendation(
            "Checkpoint the activations" + (f" of the blocks that make the most: {where}" if where else ""),
            "torch.utils.checkpoint keeps only a block's inputs and recomputes its forward during backward: about one extra "
            "forward pass buys back most of the block's activation memory.",
            "from torch.utils.checkpoint import checkpoint\nx = checkpoint(block, x, use_reentrant=False)",
        ),
        Recommendation(
            "Train in bf16 autocast" if cuda else "Try bf16 autocast",
            "Activations saved in bf16 take half the memory of fp32 ones.",
            f"with torch.autocast('{'cuda' if cuda else 'cpu'}', dtype=torch.bfloat16):\n    loss = model(x)",
        ),
        Recommendation(
            "Use a smaller micro-batch with gradient accumulation",
            "Activation memory grows with the batch; accumulating gradients over k micro-batches keeps the effective batch.",
        ),
    ]


def _anchor(shape: MemoryShape, part: str, spots: Sequence[Hotspot]) -> tuple[str, int] | None:
    if part == "activations" and shape.activation_lines:
        return shape.activation_lines[0].path, shape.activation_lines[0].line
    for spot in spots:
        if spot.category == "optimizer" or part == "activations":
            return spot.path, spot.line
    return (spots[0].path, spots[0].line) if spots else None


def memory_findings(profile: ProfileData, spots: Sequence[Hotspot]) -> list[Finding]:
    """TTR701 when optimizer state or activations dominate the peak; TTR702 when the CUDA cache is fragmented."""
    out: list[Finding] = []
    shape = profile.memory_shape
    cuda = profile.device == "cuda"
    if shape is not None and shape.peak_bytes > 0:
        part = shape.dominant
        anchor = _anchor(shape, part, spots)
        if part in ("optimizer_state", "activations") and shape.part_share(part) >= DOMINANT_SHARE and shape.peak_bytes >= MIN_PEAK_BYTES and anchor:
            what = part.replace("_", " ")
            if part == "optimizer_state" and shape.step_temporaries:
                what += f" with its step's temporaries ({_mib(shape.step_temporaries)})"
            evidence = [_composition(shape)]
            if part == "optimizer_state":
                evidence += [Evidence(f"{o.name} ({o.implementation}): {_mib(o.state_bytes)} of state for {o.params:,} parameters") for o in shape.optimizers]
                recs = optimizer_advice(shape, cuda)
            else:
                evidence += [Evidence(f"{_where(a.path, a.line)} ({a.function}): {_mib(a.bytes)} live at the peak", a.path, a.line) for a in shape.activation_lines[:3]]
                recs = activation_advice(shape, cuda)
            message = (
                f"{what} is {shape.part_share(part) * 100:.0f}% of the memory live at the peak ({_mib(shape.part_bytes(part))} of "
                f"{_mib(shape.peak_bytes)}): {recs[0].action[0].lower() + recs[0].action[1:]}"
            )
            out.append(device_finding("TTR701", anchor[0], anchor[1], message, 0.0, 0.0, evidence, recs, loud=_near_limit(profile)))
    facts = profile.device_facts
    if cuda and facts is not None and facts.reserved_peak_bytes > 0 and "expandable_segments:true" not in facts.alloc_conf.replace(" ", "").lower():
        unused = facts.reserved_peak_bytes - facts.allocated_peak_bytes
        churn = max(profile.memory_lines, key=lambda m: (m.allocated_bytes, m.path, m.line), default=None)
        anchor = (churn.path, churn.line) if churn is not None else ((spots[0].path, spots[0].line) if spots else None)
        if unused >= FRAGMENTED_BYTES and unused >= FRAGMENTED_SHARE * facts.reserved_peak_bytes and anchor:
            near_limit = _near_limit(profile)
            evidence = [Evidence(
                f"The caching allocator reserved up to {_mib(facts.reserved_peak_bytes)} but never had more than "
                f"{_mib(facts.allocated_peak_bytes)} allocated: {_mib(unused)} ({unused / facts.reserved_peak_bytes * 100:.0f}%) "
                f"sat in cached blocks; {_mib(facts.inactive_split_peak_bytes)} at most in split blocks no tensor used"
                + (f"; the GPU has {_mib(facts.total_bytes)}" if facts.total_bytes else "")
            )]
            recs = [Recommendation(
                "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                "Expandable segments grow one mapping instead of caching many fixed-size blocks, so freed memory of one size can "
                "serve another and the reserved pool stays close to what is allocated.",
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py",
            )]
            message = (
                f"the CUDA allocator reserved {_mib(facts.reserved_peak_bytes)} for at most {_mib(facts.allocated_peak_bytes)} of "
                "tensors (fragmentation): set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
            )
            out.append(device_finding("TTR702", anchor[0], anchor[1], message, 0.0, 0.0, evidence, recs, loud=near_limit))
    return out


def _near_limit(profile: ProfileData) -> bool:
    """Whether the run came close to running out of GPU memory (the allocator reserved most of it)."""
    facts = profile.device_facts
    return bool(profile.device == "cuda" and facts and facts.total_bytes and facts.reserved_peak_bytes >= NEAR_LIMIT * facts.total_bytes)


def memory_shape_json(profile: ProfileData, source: Any) -> dict[str, Any] | None:
    """report.json's ``memory_shape`` section (None when nothing was recorded)."""
    shape, facts = profile.memory_shape, profile.device_facts
    if shape is None:
        return None
    part = shape.dominant
    recs = optimizer_advice(shape, profile.device == "cuda") if part == "optimizer_state" else (
        activation_advice(shape, profile.device == "cuda") if part == "activations" else [])
    return {
        "device": shape.device,
        "peak_bytes": shape.peak_bytes,
        "peak_step": shape.peak_step,
        "components": {c: shape.components.get(c, 0) for c in MEMORY_COMPONENTS},
        "dominant": part if shape.peak_bytes > 0 else None,
        "optimizer_step_temporaries_bytes": shape.step_temporaries,
        "activation_lines": [
            {"path": a.path, "line": a.line, "function": a.function, "source": source.get(a.path, a.line), "bytes": a.bytes}
            for a in shape.activation_lines
        ],
        "optimizers": [{"name": o.name, "params": o.params, "state_bytes": o.state_bytes, "implementation": o.implementation} for o in shape.optimizers],
        "reserved_peak_bytes": facts.reserved_peak_bytes if facts and profile.device == "cuda" else None,
        "allocated_peak_bytes": facts.allocated_peak_bytes if facts and profile.device == "cuda" else None,
        "inactive_split_peak_bytes": facts.inactive_split_peak_bytes if facts and profile.device == "cuda" else None,
        "alloc_conf": (facts.alloc_conf or None) if facts else None,
        "recommendations": [{"action": r.action, "why": r.why, "example": r.example} for r in recs],
    }
