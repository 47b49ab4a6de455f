"""The pattern findings of one run, in one call for ``diagnosis.bottleneck``."""

from __future__ import annotations

from typing import Sequence

from ....findings import Finding
from ...results.profile_data import ProfileData
from ...results.trace_patterns import TraceFacts
from ...results.verdicts import Hotspot
from .matcher import matcher_findings
from .overview import overview_findings


def pattern_findings(profile: ProfileData, static: Sequence[Finding], shares: dict[str, float], spots: Sequence[Hotspot]) -> list[Finding]:
    """TensorBoard's Overview rules and torch's matcher patterns (``overview``, ``matcher``), for a trace or a profiled run."""
    facts = TraceFacts.of(profile)
    return overview_findings(profile, facts, static, shares, spots) + matcher_findings(profile, facts, static)
