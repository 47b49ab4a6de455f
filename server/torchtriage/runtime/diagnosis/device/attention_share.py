"""TTR603 ``runtime-attention-not-sdpa``: what hand-written attention (static TT508) costs in this run.

The static rule knows the lines (its span covers the scores, mask, softmax,
dropout and ``@ v`` statements); line attribution knows their time.  Each
TT508 whose lines were charged time becomes a runtime finding on its first
line, with its share of the step, the ops seen there, and the fix.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

from ....findings import Finding
from ..crosslink import normalize_path
from ...results.profile_data import ProfileData
from .constructor import device_finding
from ...results.verdicts import Evidence, Recommendation, StaticLink

STATIC_CODE = "TT508"


def attention_findings(profile: ProfileData, links: Sequence[StaticLink]) -> list[Finding]:
    """One TTR603 per hand-written attention whose lines took time."""
    out = []
    for link in links:
        if link.code != STATIC_CODE or link.self_us_per_step <= 0:
            continue
        path = normalize_path(link.path, profile.cwd)
        names: Counter[str] = Counter()
        evidence = []
        for line in range(link.line, link.end_line + 1):
            costs = [c for c in profile.lines if c.line == line and normalize_path(c.path, profile.cwd) == path]
            us = sum(c.self_us for c in costs) / max(1, profile.steps_profiled)
            for cost in costs:
                names.update({name: cost.self_us for name in cost.top_names[:2]})
            if us > 0:
                evidence.append(Evidence(f"{Path(link.path).name}:{line}: {us / 1000:.2f} ms per step", link.path, line))
        device = "GPU kernels" if profile.device == "cuda" else "CPU ops"
        top = ", ".join(n for n, _ in names.most_common(4))
        message = (
            f"hand-written attention (TT508, lines {link.line}-{link.end_line}) takes {link.line_share * 100:.0f}% of the step "
            f"({link.self_us_per_step / 1000:.2f} ms)" + (f" in {top}" if top else "")
            + ": F.scaled_dot_product_attention runs it as one fused kernel"
        )
        recs = [Recommendation(
            "Compute it with F.scaled_dot_product_attention (the TT508 quick fix)",
            f"One fused {device[:-1]} instead of separate matmul, softmax, mask and dropout ops, and no L x L weights stored "
            "for backward; 2-4x on attention in common reports, more as sequences grow.",
            "out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p if self.training else 0.0)",
        )]
        evidence.insert(0, Evidence(f"{device} at these lines: {top}" if top else f"{device} at these lines"))
        out.append(device_finding("TTR603", link.path, link.line, message, link.line_share, link.self_us_per_step, evidence, recs))
    return out
