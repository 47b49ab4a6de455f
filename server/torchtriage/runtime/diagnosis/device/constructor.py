"""One constructor for the runtime findings of the device's work (TTR6xx, TTR7xx).

They are runtime findings like the TTR5xx ones (``finding_extras.runtime_finding``:
``extra`` keeps the evidence and the fixes JSON-ready, report.json writes them
as ``evidence`` and ``recommendations``); the codes are listed in
``crosslink.RUNTIME_CODES``.  Like crosslink's, they are warnings from
``LOUD_SHARE`` of the step on, or when ``loud``.
"""

from __future__ import annotations

from typing import Sequence

from ....findings import Finding
from ..crosslink import LOUD_SHARE
from ..runtime_finding import runtime_finding
from ...results.verdicts import Evidence, Recommendation


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
    return runtime_finding(code, path, line, message, loud=loud or share >= LOUD_SHARE, share=share, us_per_step=us_per_step,
                           evidence=evidence, recommendations=recommendations)
