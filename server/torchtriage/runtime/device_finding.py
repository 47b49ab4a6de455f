"""One constructor for the runtime findings of the device's work (TTR6xx, TTR7xx).

They are ordinary ``Finding`` objects like crosslink's (their codes are listed
in ``crosslink.RUNTIME_CODES``), plus the evidence behind them and the fixes
to try (``Evidence`` and ``Recommendation`` in ``extra``), which report.json
carries as ``evidence`` and ``recommendations`` (``device_report.finding_details``).
"""

from __future__ import annotations

from typing import Sequence

from ..findings import Finding, Severity, Span
from .crosslink import LOUD_SHARE, RUNTIME_CODES
from .verdicts import Evidence, Recommendation


def device_finding(
    code: str,
    path: str,
    line: int,
    message: str,
    share: float,
    us_per_step: float,
    evidence: Sequence[Evidence] = (),
    recommendations: Sequence[Recommendation] = (),
    loud: bool = False,
) -> Finding:
    """A runtime finding at ``path:line`` costing ``share`` of the step (``us_per_step``), with its evidence and fixes."""
    return Finding(
        path=path,
        span=Span(line, 1, line + 1, 1),
        code=code,
        name=RUNTIME_CODES[code],
        severity=Severity.WARNING if loud or share >= LOUD_SHARE else Severity.INFO,
        message=message,
        extra={
            "share": share,
            "self_ms_per_step": us_per_step / 1000.0,
            "source": "runtime",
            "evidence": list(evidence),
            "recommendations": list(recommendations),
        },
    )
