"""The runtime findings about the device's work, in one call for ``diagnosis``.

TTR601/TTR602 (``tensor_cores``), TTR603 (``attention_share``), TTR604
(``idle_gaps``), TTR701/TTR702 (``memory_shape``); each module documents when
its findings are raised.  The GPU idle gaps also give evidence to the
verdicts (``idle_gaps.gap_evidence``).
"""

from __future__ import annotations

from typing import Sequence

from ....findings import Finding
from .attention_share import attention_findings
from .idle_gaps import gap_evidence, gap_findings
from .memory_shape import memory_findings
from ...results.profile_data import ProfileData
from .tensor_cores import tensor_core_findings
from ...results.verdicts import Hotspot, StaticLink, Verdict


def device_findings(profile: ProfileData, static: Sequence[Finding], links: Sequence[StaticLink], spots: Sequence[Hotspot]) -> list[Finding]:
    """Every TTR6xx / TTR7xx finding of one run."""
    return (
        tensor_core_findings(profile)
        + attention_findings(profile, links)
        + gap_findings(profile, static)
        + memory_findings(profile, spots)
    )


def with_gap_evidence(profile: ProfileData, spots: Sequence[Hotspot], verdicts: Sequence[Verdict]) -> list[Verdict]:
    """The verdicts (primary first) with the GPU idle gaps added to the evidence of the one each gap belongs to."""
    extra = gap_evidence(profile, spots, [v.kind for v in verdicts])
    return [Verdict(v.kind, v.share, v.evidence + extra.get(v.kind, []), v.recommendations) for v in verdicts]
