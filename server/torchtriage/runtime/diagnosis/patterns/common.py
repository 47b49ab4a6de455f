"""What the pattern findings share: the step window, a finding's cost, and the static findings that already say it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ....findings import Finding
from ..crosslink import LOUD_SHARE, covers
from ..runtime_finding import runtime_finding
from ...results.profile_data import ProfileData
from ...results.verdicts import Evidence, Recommendation


@dataclass(frozen=True)
class Window:
    """The recorded steps: their number and their summed time (microseconds)."""

    steps: int
    total_us: float

    @classmethod
    def of(cls, profile: ProfileData) -> "Window":
        return cls(max(1, profile.steps_profiled), sum(s.duration_us for s in profile.steps))

    def share(self, us: float) -> float:
        """``us`` summed over the steps, as a share of their time."""
        return min(1.0, max(0.0, us / self.total_us)) if self.total_us > 0 else 0.0

    def per_step_ms(self, us: float) -> float:
        return us / self.steps / 1000.0


def cost_text(window: Window, us: float) -> str:
    """``1.23 ms per step (4% of the step)``."""
    return f"{window.per_step_ms(us):.2f} ms per step ({window.share(us) * 100:.0f}% of the step)"


def said_by(static: Sequence[Finding], codes: Sequence[str], path: str, line: int, cwd: str) -> Optional[Finding]:
    """The static finding among ``codes`` that covers (path, line), if any: it already names the cause there."""
    for f in static:
        if f.code.upper() in codes and covers(f, path, line, cwd):
            return f
    return None


def pattern_finding(code: str, path: str, line: int, message: str, window: Window, us: float, *,
                    evidence: Sequence[Evidence] = (), recommendations: Sequence[Recommendation] = (),
                    details: Optional[dict[str, Any]] = None, loud: bool = False) -> Finding:
    """A runtime finding costing ``us`` over the recorded steps: a warning from ``LOUD_SHARE`` of the step on, or when ``loud``."""
    share = window.share(us)
    return runtime_finding(code, path, line, message, loud=loud or share >= LOUD_SHARE, share=share,
                           us_per_step=us / window.steps, evidence=evidence, recommendations=recommendations,
                           details=details)
