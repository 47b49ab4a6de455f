"""The largest GPU idle gaps of an analysed trace, and what the stepping thread was doing in each (agent.json's ``gaps``).

The agent's rule, from the same code (``agent/intervals.py``: ``idle_spans`` and
its constants; only the frame lookup differs, since ``agent/gaps.py`` walks torch's
event tree): the GPU activities, merged into busy intervals, leave idle spans; those inside
the recorded steps of at least ``MIN_GAP_NS`` are ranked by length and the
``MAX_GAPS`` longest kept.  ``PROBES`` instants spread over each are then looked
up in a second read of the trace, keeping for each instant only the stepping
thread's operators and Python frames that cover it (a few per instant: memory
stays bounded whatever the trace's size).  The innermost covering event is the
gap's ``cpu``; the innermost user frame gives the line: the line of that frame's
function that calls the next event in (as the sweep places calls), else the
first user frame of the innermost operator's "Call stack" (traces without
Python frames), else the function's ``def`` line (inexact).  The frame most
probes agree on is kept.
"""

from __future__ import annotations

import bisect
from collections import Counter
from pathlib import Path
from typing import Any

from ..agent.intervals import MAX_GAPS, MIN_GAP_NS, PROBES, idle_spans
from ..agent.wire import Gap
from .events import _CATEGORIES, OP, PY, TraceScan
from .frames import CodeMap, parse_frame
from .reader import read_trace
from .sweep import Sweep

Cover = tuple[int, int, int, str, str]  # start ns, -duration ns, kind, name, call stack


def _covering(path: Path, threads: set[tuple[Any, Any]], probes: list[int]) -> list[list[Cover]]:
    """Per probe instant (sorted), the stepping thread's operators and Python frames that cover it."""
    found: list[list[Cover]] = [[] for _ in probes]
    _, events = read_trace(path)
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X" or (event.get("pid"), event.get("tid")) not in threads:
            continue
        kind = _CATEGORIES.get(str(event.get("cat") or ""))
        if kind != OP and kind != PY:
            continue
        try:
            start = round(float(event["ts"]) * 1000)
            duration = max(0, round(float(event.get("dur") or 0) * 1000))
        except (KeyError, TypeError, ValueError):
            continue
        low = bisect.bisect_left(probes, start)
        high = bisect.bisect_left(probes, start + duration)
        if low < high:
            args = event.get("args")
            stack = args.get("Call stack", "") if isinstance(args, dict) else ""
            cover = (start, -duration, kind, str(event.get("name")), stack if isinstance(stack, str) else "")
            for k in range(low, high):
                found[k].append(cover)
    return found


def _frame(covers: list[Cover], sweep: Sweep, code: CodeMap) -> tuple[str, int, str, bool, str]:
    """(path, line, function, exact, innermost event) at one instant."""
    if not covers:
        return ("", 0, "", False, "")
    covers = sorted(covers)  # outermost first
    inner = covers[-1]
    cpu = parse_frame(inner[3]).function if inner[2] == PY else inner[3]
    for depth in range(len(covers) - 1, -1, -1):
        start, _, kind, name, _ = covers[depth]
        if kind != PY:
            continue
        frame = parse_frame(name)
        if not frame.path or not code.is_user(frame.path):
            continue
        local = code.local(frame.path)
        if depth + 1 < len(covers):
            callee = covers[depth + 1]
            callee_name = parse_frame(callee[3]).function if callee[2] == PY else callee[3]
            line = sweep.callsites.line(local, frame.function, frame.line, callee_name, False)
            if line is not None:
                return (local, line, frame.function, True, cpu)
        return (local, frame.line, frame.function, False, cpu)
    for start, _, kind, name, stack in reversed(covers):
        for part in stack.split(";") if stack else ():
            frame = parse_frame(part.strip())
            if frame.path and code.is_user(frame.path):
                return (code.local(frame.path), frame.line, frame.function, True, cpu)
    return ("", 0, "", False, cpu)


def trace_gaps(path: Path, scan: TraceScan, sweep: Sweep, code: CodeMap) -> list[Gap]:
    """agent.json's ``gaps`` for the trace at ``path`` (its steps and GPU work as the sweep found them)."""
    spans = [s for s in idle_spans(sweep.device.gpu, list(sweep.clock.steps)) if s[2] - s[1] >= MIN_GAP_NS]
    spans = sorted(spans, key=lambda s: (s[1] - s[2], s[1]))[:MAX_GAPS]
    if not spans or sweep.main_thread is None:
        return []
    instants = sorted({low + (high - low) * (2 * k + 1) // (2 * PROBES) for _, low, high, _ in spans for k in range(PROBES)})
    threads = {key for key, number in scan.threads.items() if number == sweep.main_thread}
    covers = dict(zip(instants, _covering(path, threads, instants)))
    out = []
    for position, low, high, name in spans:
        frames = Counter(_frame(covers[low + (high - low) * (2 * k + 1) // (2 * PROBES)], sweep, code) for k in range(PROBES))
        (where, probes), = frames.most_common(1)
        out.append(Gap(position, low, high - low, where[0], where[1], where[2], where[3], where[4], probes, name))
    return out
