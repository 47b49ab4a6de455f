"""The diagnosis stage's data types: verdicts, evidence, fixes, hot lines, memory, static links.

The bottom module of diagnosis: ``advice``, ``crosslink`` and ``diagnosis``
import these and return them; ``report`` serialises a ``Diagnosis``.  Plain
data, no logic beyond derived properties.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...findings import Finding
from .profile_data import MemoryLine, MemoryStep, SyncPoint


@dataclass(frozen=True)
class Evidence:
    """One fact behind a verdict; ``path``/``line`` when it points at source."""

    text: str
    path: str = ""
    line: int = 0


@dataclass(frozen=True)
class Recommendation:
    """One fix: what to do, why it helps here, and a short code example."""

    action: str
    why: str
    example: str = ""


@dataclass
class Verdict:
    """One bottleneck: its kind, share of the step, evidence and fixes."""

    kind: str
    share: float
    evidence: list[Evidence] = field(default_factory=list)
    recommendations: list[Recommendation] = field(default_factory=list)


@dataclass(frozen=True)
class Withheld:
    """A secondary verdict the mean supports but the steps do not: too noisy to call."""

    kind: str
    share: float  # its share of the mean step
    steps_at_bar: int  # steps in which it reached its bar
    steps: int
    reason: str


@dataclass
class Hotspot:
    """One source line with all the time charged to it per step."""

    path: str
    line: int
    self_us_per_step: float
    share: float
    category: str  # the category with most of this line's time
    function: str = ""
    top_names: list[str] = field(default_factory=list)
    detail: str = ""
    static_codes: list[str] = field(default_factory=list)  # codes of the static findings covering the line


@dataclass
class MemoryTrend:
    """Per-step memory and whether it grows steadily."""

    peak_bytes: int
    growth_bytes_per_step: float
    fit_r2: float
    steady_growth: bool
    steps: list[MemoryStep] = field(default_factory=list)
    top_lines: list[MemoryLine] = field(default_factory=list)
    snapshot: str = ""  # path of a CUDA memory snapshot, when the runner took one

    @property
    def window_growth_share(self) -> float:
        """Fraction of the last step's end allocation added over the window (the memory verdict's share)."""
        if len(self.steps) < 2 or self.steps[-1].end_bytes <= 0:
            return 0.0
        added = self.growth_bytes_per_step * (len(self.steps) - 1)
        return max(0.0, min(1.0, added / self.steps[-1].end_bytes))


@dataclass
class StaticLink:
    """One static finding with what its lines and its category cost at runtime."""

    code: str
    name: str
    path: str
    line: int
    end_line: int
    message: str
    category: str  # the rule's category ("" when unknown)
    self_us_per_step: float  # time charged to the lines the span covers
    line_share: float
    category_share: float  # share of the rule's category in the step (0 if not a runtime category)
    # False for a CUDA-only rule on a CPU run: it would matter on a GPU, it costs nothing here
    applies_on_this_device: bool = True

    @property
    def hot(self) -> bool:
        return self.line_share > 0


@dataclass
class Diagnosis:
    """Everything a report shows, derived from one ProfileData."""

    step_us: float
    steps: int
    breakdown: dict[str, float]  # category -> share of the mean step, sums to ~1
    bottleneck: Verdict
    secondary: list[Verdict]
    hotspots: list[Hotspot]
    memory: MemoryTrend
    sync_points: list[SyncPoint]
    static_links: list[StaticLink] = field(default_factory=list)
    runtime_findings: list[Finding] = field(default_factory=list)
    breakdown_spread: dict[str, dict[str, float]] = field(default_factory=dict)  # category -> min/q1/median/q3/max per-step share
    withheld: list[Withheld] = field(default_factory=list)  # secondary verdicts too noisy to call
