"""Does a fix change what the script learns?  The loss of each backward pass, before and after.

Both versions run with the same seed (``RunOptions.seed``) and the agent keeps
every backward pass's loss (``record_losses``).  A fix that only moves work
(loader workers, logging less often, ``set_to_none``) leaves the trajectory
equal up to float noise; one that changes the arithmetic (autocast, a fused
kernel with another summation order, a different batch) moves it.  The
tolerance is relative: float32 reductions in another order differ by about
1e-6 per step and drift with training; bf16 differs by 1e-2 at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

RELATIVE_TOLERANCE = 1e-3  # larger relative differences are not float noise
MIN_COMMON = 2  # fewer common backward passes than this: nothing to say


@dataclass(frozen=True)
class LossCheck:
    """The two trajectories over their common prefix."""

    compared: int  # backward passes compared
    max_relative_diff: Optional[float]  # None: nothing comparable
    changed: bool
    first_changed: Optional[int]  # 0-based backward pass where the difference first exceeds the tolerance

    def to_json(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "max_relative_diff": None if self.max_relative_diff is None else float(f"{self.max_relative_diff:.3g}"),
            "tolerance": RELATIVE_TOLERANCE,
            "changed": self.changed,
            "first_changed": self.first_changed,
        }


def compare_losses(before: Sequence[Optional[float]], after: Sequence[Optional[float]]) -> LossCheck:
    """Compare the losses pass by pass over the passes both runs made (NaN on one side only is a change)."""
    worst: Optional[float] = None
    first: Optional[int] = None
    compared = 0
    for index, (a, b) in enumerate(zip(before, after)):
        if a is None and b is None:
            continue
        compared += 1
        if a is None or b is None:
            diff = 2.0  # the largest relative difference two finite numbers can have
        else:
            diff = abs(a - b) / max(abs(a), abs(b), 1e-12)
        worst = diff if worst is None else max(worst, diff)
        if first is None and diff > RELATIVE_TOLERANCE:
            first = index
    if compared < MIN_COMMON:
        return LossCheck(compared, None, False, None)
    return LossCheck(compared, worst, first is not None, first)
