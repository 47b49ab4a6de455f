"""The largest GPU idle gaps of an analysed trace, and what the stepping thread was doing in each (agent.json's ``gaps``).

The agent's rule, from the same code (``agent/intervals.py``: its constants;
only the frame lookup differs, since ``agent/gaps.py`` walks torch's event tree):
the GPU activities, merged into busy intervals, leave idle spans; those inside
the recorded steps of at least ``MIN_GAP_NS`` are ranked by length and the
``MAX_GAPS`` longest kept.  The busy spans come from the first pass over the
trace (``TraceScan.gpu``), so ``plan`` names the ``PROBES`` instants spread over
each gap before the sweep starts, and the sweep keeps, as it passes each instant,
the stepping thread's operators and Python frames open then (``covering``): a few
per instant, with no second read of the trace.  The innermost covering event is
the gap's ``cpu``; the innermost user frame gives the line: the line of that
frame's function that calls the next event in (as the sweep places calls), else
the first user frame of the innermost operator's "Call stack" (traces without
Python frames), else the function's ``def`` line (inexact).  The frame most
probes agree on is kept.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..agent.intervals import MAX_GAPS, MIN_GAP_NS, PROBES
from ..agent.wire import Gap
from .events import OP, PY
from .frames import CodeMap, parse_frame

if TYPE_CHECKING:
    from .callsites import CallSites

Cover = tuple[int, str, Optional[tuple[str, int, str, int]], str]  # kind, name, user frame (user functions), call stack
Span = tuple[int, int, int, str]  # step position, start ns, end ns, the activity after it
Where = tuple[str, int, str, bool, str]  # path, line, function, exact, innermost event


@dataclass
class GapPlan:
    """The gaps to name and the instants to look at in each; the sweep fills ``covers`` as it passes them."""

    spans: list[Span] = field(default_factory=list)
    instants: list[int] = field(default_factory=list)  # sorted
    covers: dict[int, list[Cover]] = field(default_factory=dict)  # instant -> the covering events, outermost first


def probe_instants(low: int, high: int) -> list[int]:
    return [low + (high - low) * (2 * k + 1) // (2 * PROBES) for k in range(PROBES)]


def plan(idle: Sequence[Span], main_thread: Optional[int]) -> GapPlan:
    """The ``MAX_GAPS`` longest idle spans of at least ``MIN_GAP_NS`` and their probe instants."""
    spans = [s for s in idle if s[2] - s[1] >= MIN_GAP_NS]
    spans = sorted(spans, key=lambda s: (s[1] - s[2], s[1]))[:MAX_GAPS]
    if not spans or main_thread is None:
        return GapPlan()
    return GapPlan(spans, sorted({t for _, low, high, _ in spans for t in probe_instants(low, high)}))


def covering(stack: Sequence[Any], instant: int) -> list[Cover]:
    """The operators and Python frames of a thread's open stack (``sweep._Entry``) that cover ``instant``."""
    out = []
    for entry in stack:
        if entry.start <= instant < entry.end and (entry.kind == OP or entry.kind == PY):
            user = entry.frame if entry.kind == PY and entry.py_function and isinstance(entry.frame, tuple) else None
            out.append((entry.kind, entry.op if entry.kind == OP else entry.name, user, entry.stack))
    return out


def _frame(covers: list[Cover], callsites: "CallSites", code: CodeMap) -> Where:
    """(path, line, function, exact, innermost event) at one instant."""
    if not covers:
        return ("", 0, "", False, "")
    cpu = covers[-1][1]
    for depth in range(len(covers) - 1, -1, -1):
        user = covers[depth][2]
        if user is None:
            continue
        local, line, function, _ = user
        if depth + 1 < len(covers):
            placed = callsites.line(local, function, line, covers[depth + 1][1], False)
            if placed is not None:
                return (local, placed, function, True, cpu)
        return (local, line, function, False, cpu)
    for _, _, _, stack in reversed(covers):
        for part in stack.split(";") if stack else ():
            frame = parse_frame(part.strip())
            if frame.path and code.is_user(frame.path):
                return (code.local(frame.path), frame.line, frame.function, True, cpu)
    return ("", 0, "", False, cpu)


def trace_gaps(gaps: GapPlan, callsites: "CallSites", code: CodeMap) -> list[Gap]:
    """agent.json's ``gaps`` from the plan the sweep filled in."""
    out = []
    for position, low, high, name in gaps.spans:
        frames = Counter(_frame(gaps.covers.get(t, []), callsites, code) for t in probe_instants(low, high))
        (where, probes), = frames.most_common(1)
        out.append(Gap(position, low, high - low, where[0], where[1], where[2], where[3], where[4], probes, name))
    return out
