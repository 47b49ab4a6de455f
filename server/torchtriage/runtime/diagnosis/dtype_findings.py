"""Dtype churn (TTR503): ops that mix 16-bit and 32-bit floats, and the casts they cause.

The attribution (``attribution/dtypes.py``) resolves the agent's ``dtype_events``
(agent/dtypes.py) to user lines with the same chains and samples as the time charges.
``dtype_findings`` raises TTR503

* on each line whose ops mix a 16-bit float (bfloat16/float16) with a wider
  one: the result is promoted to the wider dtype, and the narrow operand is
  cast on every call (the "adding a float32 tensor to a bfloat16 tensor"
  signature), with the line that made the wide tensor when it is known;
* on each line that casts explicitly (``.to()``, ``.bfloat16()``...) down to
  a 16-bit float in a run that also promotes: converting back what a
  promotion widened (the backward of that cast counts with it).  Casts alone
  (``logits.float()`` before a loss, autocast's own casts inside an op) and
  explicit upcasts are not churn and raise nothing, and neither do mixed inputs
  of an op that cannot promote (``AUTOCAST_CAST_INSIDE``: autocast cast them).
"""

from __future__ import annotations

import collections

from ...findings import Finding
from .advice import where
from ..results.profile_data import DtypeLine, ProfileData
from .runtime_finding import runtime_finding
from ..results.verdicts import Evidence, Recommendation

EXPLICIT_CASTS = ("aten::to", "aten::_to_copy", "aten::copy_")  # a cast the user asked for (top-level op)
# Ops that never promote: outside autocast they refuse mixed float inputs ("mat1 and mat2 must have the same
# dtype", "Input type (c10::Half) and weight type (float) should be the same"), so one recorded with mixed
# inputs ran under autocast, which casts them down inside the op (seen on an H200: fp16 autocast's
# aten::linear of a float16 activation and the float32 weight).
AUTOCAST_CAST_INSIDE = frozenset((
    "aten::linear", "aten::matmul", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::mv",
    "aten::addmv", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
    "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::prelu",
    "aten::scaled_dot_product_attention", "aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell",
))
NARROW = ("bfloat16", "float16")
LOUD_SHARE = 0.05
LOUD_BYTES_PER_STEP = 1 << 20



def size_text(n: float) -> str:
    """Bytes as B / KiB / MiB."""
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n:.0f} B"


def _wide(dtypes: str) -> str:
    return "float64" if "float64" in dtypes else "float32"


FIXES = [
    Recommendation(
        "Make the wide tensor in the model's dtype: register it as a buffer before model.to(dtype), "
        "or create it with dtype=x.dtype",
        "then every op stays in the narrow dtype: no promotion, no cast per call",
        "self.register_buffer('scale', torch.ones(64))   # moved by model.to(torch.bfloat16)\n"
        "c = torch.tensor(values, dtype=x.dtype, device=x.device)",
    ),
    Recommendation(
        "Or cast it once, outside the step",
        "a cast per call moves the whole tensor every step",
        "model.scale = model.scale.to(torch.bfloat16)",
    ),
    Recommendation(
        "Or run the step under torch.autocast and keep the model in float32",
        "autocast picks each op's dtype itself: matmuls in bfloat16, reductions in float32",
        "with torch.autocast(device_type='cpu', dtype=torch.bfloat16):\n    loss = model(x)",
    ),
]


def dtype_findings(profile: ProfileData) -> list[Finding]:
    """TTR503 on lines that promote mixed float dtypes, and on lines that cast the result back."""
    lines = profile.dtype_lines
    mixed = [d for d in lines if d.kind == "mixed" and d.op not in AUTOCAST_CAST_INSIDE]
    if not mixed:
        return []
    n = max(1, profile.steps_profiled)
    total = sum(s.duration_us for s in profile.steps)
    casts: dict[tuple[str, int], list[DtypeLine]] = collections.defaultdict(list)
    for d in lines:
        if d.kind == "cast":
            casts[(d.path, d.line)].append(d)
    by_line: dict[tuple[str, int], list[DtypeLine]] = collections.defaultdict(list)
    for d in mixed:
        by_line[(d.path, d.line)].append(d)
    first = min(by_line)
    out = []
    for (path, line), ops in sorted(by_line.items()):
        cast = casts.get((path, line), [])
        out.append(_promotion(path, line, ops, cast, n, total))
    for (path, line), cast in sorted(casts.items()):
        down = [c for c in cast if c.op in EXPLICIT_CASTS and c.dtypes.endswith(NARROW)]
        if (path, line) in by_line or not down:
            continue
        out.append(_cast_back(path, line, cast, first, n, total))
    return out


def _promotion(path: str, line: int, ops: list[DtypeLine], casts: list[DtypeLine], n: int, total: float) -> Finding:
    top = max(ops, key=lambda d: d.count)
    count = sum(d.count for d in ops)
    moved = sum(c.bytes for c in casts)
    cast_us = sum(c.cast_us for c in casts)
    origin = next(((d.origin_path, d.origin_line) for d in ops if d.origin_path), ("", 0))
    wide = _wide(top.dtypes)
    message = (
        f"{top.op} mixes {top.dtypes} {count / n:g}x per step: the result is promoted to {wide}"
        + (f", casting {size_text(moved / n)} per step ({cast_us / n / 1000:.3f} ms)" if moved else "")
        + (f"; the {wide} tensor comes from {where(*origin)}" if origin[0] else "; the wide tensor was made before the recorded steps")
    )
    evidence = [Evidence(f"{d.op}: {d.dtypes}, {d.count / n:g}x per step", path, line) for d in ops]
    evidence += [Evidence(f"cast {c.dtypes} inside {c.op}: {c.count / n:g}x per step, {size_text(c.bytes / n)} read and written", path, line)
                 for c in casts]
    if origin[0]:
        evidence.append(Evidence(f"the {wide} operand was made here", origin[0], origin[1]))
    share = cast_us / total if total > 0 else 0.0
    return runtime_finding(
        "TTR503", path, line, message, loud=share >= LOUD_SHARE or moved / n >= LOUD_BYTES_PER_STEP,
        share=share, us_per_step=cast_us / n, evidence=evidence, recommendations=FIXES,
        details={"kind": "promotion", "op": top.op, "dtypes": top.dtypes, "per_step": round(count / n, 3),
                 "cast_bytes_per_step": round(moved / n), "origin_path": origin[0] or None, "origin_line": origin[1] or None},
    )


def _cast_back(path: str, line: int, casts: list[DtypeLine], promoted_at: tuple[str, int], n: int, total: float) -> Finding:
    moved = sum(c.bytes for c in casts)
    cast_us = sum(c.cast_us for c in casts)
    down = [c for c in casts if c.op in EXPLICIT_CASTS and c.dtypes.endswith(NARROW)]
    directions = ", ".join(dict.fromkeys(c.dtypes for c in down))
    count = sum(c.count for c in down)
    message = (
        f"casts {directions} {count / n:g}x per step, back down after the step promoted mixed dtypes "
        f"(first at {where(*promoted_at)}): {size_text(moved / n)} cast per step"
        + (" with its backward" if any(c.op not in EXPLICIT_CASTS for c in casts) else "")
        + f" ({cast_us / n / 1000:.3f} ms)"
    )
    share = cast_us / total if total > 0 else 0.0
    evidence = [Evidence(f"{c.op}: {c.dtypes}, {c.count / n:g}x per step, {size_text(c.bytes / n)} read and written", path, line) for c in casts]
    evidence.append(Evidence("a promotion to a wider dtype happens here", *promoted_at))
    return runtime_finding(
        "TTR503", path, line, message, loud=share >= LOUD_SHARE or moved / n >= LOUD_BYTES_PER_STEP,
        share=share, us_per_step=cast_us / n, evidence=evidence,
        recommendations=[Recommendation(f"Remove the promotion at {where(*promoted_at)} (see its TTR503)",
                                        "without a wider result there is nothing to cast back", "")] + FIXES,
        details={"kind": "cast", "op": down[0].op, "dtypes": directions, "per_step": round(count / n, 3),
                 "cast_bytes_per_step": round(moved / n), "origin_path": promoted_at[0] or None, "origin_line": promoted_at[1] or None},
    )
