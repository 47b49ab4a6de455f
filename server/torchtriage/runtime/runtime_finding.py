"""A runtime finding that carries its evidence, its fixes and code-specific details.

The TTR1xx-3xx findings of ``crosslink`` say everything in their message.
Later runtime findings (TTR5xx: torch.compile and dtypes) also carry the facts
behind them and the fixes to try, in the shapes verdicts use (``Evidence``,
``Recommendation``), plus a ``details`` dict of figures; report.json writes them
as ``evidence``, ``recommendations`` and ``details`` (new in 1.2).
"""

from __future__ import annotations

from typing import Any, Sequence

from ..findings import Finding, Severity, Span
from .crosslink import RUNTIME_CODES
from .verdicts import Evidence, Recommendation


def runtime_finding(
    code: str,
    path: str,
    line: int,
    message: str,
    *,
    loud: bool,
    share: float = 0.0,
    us_per_step: float = 0.0,
    evidence: Sequence[Evidence] = (),
    recommendations: Sequence[Recommendation] = (),
    details: dict[str, Any] | None = None,
) -> Finding:
    """A ``Finding`` on ``path:line`` (warning when ``loud``, else info) with its evidence and fixes in ``extra``."""
    return Finding(
        path=path,
        span=Span(line, 1, line + 1, 1),
        code=code,
        name=RUNTIME_CODES[code],
        severity=Severity.WARNING if loud else Severity.INFO,
        message=message,
        extra={
            "share": max(0.0, min(1.0, share)),
            "self_ms_per_step": max(0.0, us_per_step) / 1000.0,
            "source": "runtime",
            "evidence": list(evidence),
            "recommendations": list(recommendations),
            "details": dict(details or {}),
        },
    )


def finding_extras_json(finding: Finding) -> dict[str, Any]:
    """The report.json fields a runtime finding adds when it has them: evidence, recommendations, details."""
    extra = finding.extra
    out: dict[str, Any] = {}
    if "evidence" in extra:
        out["evidence"] = [{"text": e.text, "path": e.path or None, "line": e.line or None} for e in extra["evidence"]]
    if "recommendations" in extra:
        out["recommendations"] = [{"action": r.action, "why": r.why, "example": r.example} for r in extra["recommendations"]]
    if "details" in extra:
        out["details"] = dict(extra["details"])
    return out
