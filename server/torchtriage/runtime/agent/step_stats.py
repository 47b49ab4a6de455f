"""How many consecutive steps belong together, and how well a run's steps pin down its mean step.

Shared by the agent's recording window (record until the mean is known well
enough) and the comparison of two runs (``compare/interval.py``), so both cut
the steps the same way.  Steps are not independent draws: with two DataLoader
workers every other step waits for a batch, and a gradient-accumulation step is
slow once in N.  ``block_length`` finds that rhythm; means of whole blocks are
then about independent.  Standard library only (the agent runs in the user's
interpreter).
"""

import math
from typing import Optional, Sequence

# The adaptive recording window (agent/window.py): at least MIN_ACTIVE steps, then until the 95 % interval of the
# mean step is within TARGET_HALF_WIDTH of it, at most MAX_ACTIVE steps or MAX_RECORD_S seconds of recording.
MIN_ACTIVE = 5
MAX_ACTIVE = 30
MAX_RECORD_S = 6.0
TARGET_HALF_WIDTH = 0.05

RHYTHM_CORRELATION = 0.5  # a lag this correlated is a rhythm (a worker cycle, an accumulation period)
Z95 = 1.959963984540054  # two-sided 95 % normal quantile


def autocorrelation(values: Sequence[float], lag: int) -> float:
    """The sample autocorrelation of ``values`` at ``lag`` (0 when it is undefined)."""
    n = len(values)
    if lag <= 0 or lag >= n:
        return 0.0
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values)
    if var <= 1e-12 * n * mean * mean:  # equal steps (up to rounding): nothing to correlate
        return 0.0
    return sum((values[i] - mean) * (values[i + lag] - mean) for i in range(n - lag)) / var


def block_length(steps: Sequence[float]) -> int:
    """How many consecutive steps one block holds so that block means are about independent.

    The rhythm of the steps when they have one (the lag from 2 to a third of the run with the
    highest autocorrelation, at least ``RHYTHM_CORRELATION`` and above that of lag 1); else about ``n ** (1/3)`` steps
    when neighbouring steps are correlated (lag-1 autocorrelation above ``2 / sqrt(n)``); else 1."""
    n = len(steps)
    if n < 4:
        return 1
    lags = range(2, max(2, n // 3) + 1)
    rhythm = max(lags, key=lambda k: (autocorrelation(steps, k), -k))
    lag1 = autocorrelation(steps, 1)
    if autocorrelation(steps, rhythm) >= RHYTHM_CORRELATION and autocorrelation(steps, rhythm) > lag1:
        return rhythm  # a drift correlates every lag, its nearest neighbours most: not a rhythm
    if lag1 > 2 / math.sqrt(n):
        return max(2, int(round(n ** (1 / 3))))
    return 1


def mean_half_width(steps: Sequence[float]) -> Optional[float]:
    """Half the width of the 95 % interval of the run's mean step, as a share of it (None below two blocks).

    The normal approximation over the means of whole blocks (``block_length`` steps each)."""
    length = block_length(steps)
    blocks = [sum(steps[i:i + length]) / length for i in range(0, len(steps) - length + 1, length)]
    if len(blocks) < 2:
        return None
    mean = sum(blocks) / len(blocks)
    if mean <= 0:
        return None
    sd = math.sqrt(sum((b - mean) ** 2 for b in blocks) / (len(blocks) - 1))
    return Z95 * sd / math.sqrt(len(blocks)) / mean
