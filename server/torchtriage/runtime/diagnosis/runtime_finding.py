"""A runtime finding that carries its evidence, its fixes and code-specific details (TTR5xx).

The TTR1xx-3xx findings of ``crosslink`` say everything in their message.  The
torch.compile and dtype findings also carry the facts behind them and the fixes
to try, shaped as verdicts' (``Evidence``, ``Recommendation``), and a
``details`` dict of figures; ``extra`` keeps them JSON-ready and report.json
writes them as ``evidence``, ``recommendations`` and ``details`` (new in 1.2).
"""

from __future__ import annotations

from typing import Any, Sequence

from ...findings import Finding, Severity, Span
from .crosslink import RUNTIME_CODES
from ..results.verdicts import Evidence, Recommendation


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
    """A ``Finding`` on ``path:line`` (warning when ``loud``, else info) with its evidence, fixes and details in ``extra``."""
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
            "evidence": [{"text": e.text, "path": e.path or None, "line": e.line or None} for e in evidence],
            "recommendations": [{"action": r.action, "why": r.why, "example": r.example} for r in recommendations],
            "details": dict(details or {}),
        },
    )


def finding_extras_json(finding: Finding) -> dict[str, Any]:
    """The report.json fields a runtime finding adds when it has them: evidence, recommendations, details."""
    return {key: finding.extra[key] for key in ("evidence", "recommendations", "details") if key in finding.extra}
