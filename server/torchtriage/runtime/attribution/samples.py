"""Frame samples -> source lines for work the event tree can only place in a function.

The agent charges the own time of a user function (its bytecode, and ops reached
through operator slots such as ``a @ b`` or ``x[i]``) to a ``scope`` site; the
main thread's frame samples say which of the function's lines it was on.  Used by
``attribution``.
"""

from __future__ import annotations

import bisect
import collections
import math
from typing import Any, Iterable, NamedTuple, Optional

from ..agent.wire import Root, Sample, Site, read_records

Weights = list[tuple[int, float]]  # (line, weight) summing to 1
FrameKey = tuple[str, int, str]  # (path, line, function)

GAP_CAP = 10  # a sample stands for the time to its neighbours, at most this many sampling intervals
# A line whose exact calls take at least this share of its sampled time has no own time
# the samples can show: the sampler runs more often while the GIL is free (a sleep, a
# long op) than while bytecode runs, so such lines are over-sampled.
EXPLAINED = 0.5


class FrameSample(NamedTuple):
    """A frame sample with its file and function names (the wire's ``Sample`` holds indexes)."""

    time_ns: int
    path: str
    function: str
    line: int


def read_samples(raw: dict[str, Any], key: str) -> list[FrameSample]:
    """``samples`` / ``worker_samples`` of agent.json, names looked up in its ``strings``."""
    strings = raw.get("strings", [])
    try:
        return [FrameSample(int(s.time_ns), str(strings[s.path]), str(strings[s.function]), int(s.line))
                for s in read_records(raw.get(key, []), Sample)]
    except (IndexError, TypeError):
        raise ValueError(f"agent.json: a {key} record names a string that is not in 'strings'") from None


class LineResolver:
    """Resolves ``scope`` sites to lines with the frame samples.

    A sample names the line its function was on, also while that line was inside a
    call the event tree already timed exactly (``time.sleep``, a module call): such
    samples must not vote for where the function's *own* time goes, or the line of a
    long call collects the bytecode and operator-slot time of every other line.
    ``discount`` takes the exactly-timed time per line; each line then keeps only the
    part of its sampled time the exact calls do not explain.
    """

    def __init__(self, samples: Iterable[FrameSample], roots: list[Root], interval_s: Optional[float] = None) -> None:
        ordered = sorted((int(s.time_ns), str(s.path), str(s.function), int(s.line)) for s in samples)
        self.times = [s[0] for s in ordered]
        self.samples = ordered
        self.roots = roots
        interval_ns = int((interval_s or 0.001) * 1e9)
        self.span_us = _spans(self.times, GAP_CAP * interval_ns)
        self.by_function: dict[tuple[str, str], collections.Counter[int]] = collections.defaultdict(collections.Counter)
        self.sampled_us: dict[tuple[str, str], dict[int, float]] = collections.defaultdict(lambda: collections.defaultdict(float))
        for (_, path, function, line), span in zip(ordered, self.span_us):
            self.by_function[(path, function)][line] += 1
            self.sampled_us[(path, function)][line] += span
        self.keep: dict[tuple[str, str, int], float] = {}  # share of a line's samples the exact calls leave unexplained
        self.unresolved_us = 0.0
        self.cap_ns = GAP_CAP * interval_ns
        self._by_root: Optional[dict[int, dict[FrameKey, float]]] = None  # root -> lines of the samples innermost in it

    def discount(self, exact_us: dict[tuple[str, str, int], float], own_us: dict[tuple[str, str], float]) -> None:
        """Work out which part of each line's sampled time is the function's own.

        ``exact_us``: (path, function, line) -> main-thread time the tree timed in calls
        made from that line; ``own_us``: (path, function) -> the time charged to the
        function's scope (its bytecode and operator-slot ops), the time to place.  The
        sampled times are first scaled so that the function's samples add up to both; a
        line keeps what its sampled time exceeds its exact calls by, less one standard
        error of its sample count (a sleep line sampled a little longer than it slept is
        noise, not own work), and nothing when its exact calls explain most of it."""
        for (path, function), lines in self.sampled_us.items():
            sampled = sum(lines.values())
            measured = own_us.get((path, function), 0.0) + sum(exact_us.get((path, function, line), 0.0) for line in lines)
            scale = measured / sampled if sampled > 0 and measured > 0 else 1.0
            for line, span in lines.items():
                t = span * scale
                exact = exact_us.get((path, function, line), 0.0)
                residual = t - exact
                if exact > 0:
                    count = self.by_function[(path, function)][line]
                    residual -= t / math.sqrt(count) if count else t
                    if exact >= EXPLAINED * t:
                        residual = 0.0
                self.keep[(path, function, line)] = max(0.0, residual) / t if t > 0 else 1.0

    def _residual(self, path: str, function: str, line: int, span: float) -> float:
        return span * self.keep.get((path, function, line), 1.0)

    def weights(self, site: Site, root: int, self_us: float = 0.0) -> tuple[Weights, bool]:
        """Lines for work charged to ``site`` (inside pending root ``root``), and whether sampled.

        The samples inside the root's interval name the lines first, as far as their
        unexplained time covers the root's own time ``self_us``; the function's samples
        over the whole window (unexplained part) fill the rest.
        """
        if site.kind == "line":
            return [(site.line, 1.0)], True
        key = (site.path, site.function)
        inside: dict[int, float] = collections.defaultdict(float)
        if 0 <= root < len(self.roots):
            start, end = self.roots[root].start_ns, self.roots[root].end_ns
            lo, hi = bisect.bisect_left(self.times, start), bisect.bisect_right(self.times, end)
            for (_, p, f, line), span in zip(self.samples[lo:hi], self.span_us[lo:hi]):
                if (p, f) == key:
                    inside[line] += self._residual(p, f, line, span)
        overall = {line: self._residual(key[0], key[1], line, span) for line, span in self.sampled_us.get(key, {}).items()}
        mixed = _blend(inside, overall, self_us)
        if not mixed:  # no sample, or all of them inside calls timed exactly: the line is unknown
            return [(site.line, 1.0)], False
        total = sum(mixed.values())
        return [(line, w / total) for line, w in sorted(mixed.items())], True

    def root_lines(self, root: int) -> tuple[list[tuple[FrameKey, float]], bool]:
        """Lines for work charged with no site to ``root`` (a window recorded without Python frames).

        The samples whose innermost root is this one name the lines, each weighted by the time it
        stands for; a root too short to hold a sample (most single ops) takes the line of the sample
        nearest to it, if one was taken within ``GAP_CAP`` sampling intervals.  Whether a line was found."""
        if self._by_root is None:
            self._by_root = self._innermost_roots()
        own = self._by_root.get(root)
        if own:
            total = sum(own.values())
            return [(key, w / total) for key, w in sorted(own.items())], True
        nearest = self._nearest(root)
        return ([(nearest, 1.0)], True) if nearest is not None else ([], False)

    def _innermost_roots(self) -> dict[int, dict[FrameKey, float]]:
        """Each sample's innermost enclosing root (roots nest: a range, the ops inside it), by sweeping both in time order."""
        order = sorted(range(len(self.roots)), key=lambda i: (self.roots[i].start_ns, -self.roots[i].end_ns))
        found: dict[int, dict[FrameKey, float]] = collections.defaultdict(lambda: collections.defaultdict(float))
        open_roots: list[int] = []
        k = 0
        for (time_ns, path, function, line), span in zip(self.samples, self.span_us):
            while k < len(order) and self.roots[order[k]].start_ns <= time_ns:
                open_roots.append(order[k])
                k += 1
            while open_roots and self.roots[open_roots[-1]].end_ns <= time_ns:
                open_roots.pop()
            if open_roots:
                found[open_roots[-1]][(path, line, function)] += span
        return found

    def _nearest(self, root: int) -> Optional[FrameKey]:
        """The line of the sample nearest to ``root``'s interval, within ``cap_ns`` of it."""
        if not 0 <= root < len(self.roots) or not self.times:
            return None
        start, end = self.roots[root].start_ns, self.roots[root].end_ns
        i = bisect.bisect_left(self.times, start)
        candidates = [(start - self.times[i - 1], i - 1)] if i > 0 else []
        j = bisect.bisect_left(self.times, end, lo=i)
        if j < len(self.times):
            candidates.append((self.times[j] - end, j))
        if not candidates:
            return None
        gap, index = min(candidates)
        if gap > self.cap_ns:
            return None
        _, path, function, line = self.samples[index]
        return (path, line, function)


def _spans(times: list[int], cap_ns: int) -> list[float]:
    """The time (us) each sample stands for: half the gap to each neighbour, each half capped."""
    if not times:
        return []
    half = [min(b - a, cap_ns) / 2.0 for a, b in zip(times, times[1:])]
    edge = cap_ns / (2.0 * GAP_CAP)  # half a sampling interval at either end of the window
    return [((half[i - 1] if i > 0 else edge) + (half[i] if i < len(half) else edge)) / 1000.0 for i in range(len(times))]


def _blend(inside: dict[int, float], overall: dict[int, float], self_us: float) -> dict[int, float]:
    """Weights from the root's own samples, topped up from the function-wide ones.

    The root's samples get the weight of the time they cover (at most ``self_us``, all
    of it when ``self_us`` is unknown); the function-wide distribution gets the rest."""
    mass_in, mass_all = sum(inside.values()), sum(overall.values())
    if mass_in <= 0:
        return {line: w for line, w in overall.items() if w > 0}
    trust = 1.0 if self_us <= 0 else min(1.0, mass_in / self_us)
    out: dict[int, float] = collections.defaultdict(float)
    for line, w in inside.items():
        out[line] += trust * w / mass_in
    if trust < 1.0 and mass_all > 0:
        for line, w in overall.items():
            out[line] += (1.0 - trust) * w / mass_all
    return {line: w for line, w in out.items() if w > 0}
