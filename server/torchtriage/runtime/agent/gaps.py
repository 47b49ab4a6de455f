"""The largest GPU idle gaps of the recorded steps, and what the main thread was doing in each.

The by-hand exercise: find the gap between consecutive kernels on the GPU
timeline, then the stack frame the CPU was in meanwhile.  Kernels (the
collector's ``gpu`` records) are merged into busy intervals; the idle spans
between them, clipped to the recorded steps, are ranked by length.  For each
of the largest, ``PROBES`` instants spread over the gap are looked up in the
main thread's event tree, descending to the innermost event covering each:
the innermost user line on the way (the call site of the deepest call made
from user code; only the function when the probe lands in the user function's
own bytecode) and the innermost event (an op such as
``aten::_local_scalar_dense``, or a Python function) are the gap's frame; the
one most probes agree on is kept.  Standard library and torch only.
"""

from __future__ import annotations

import bisect
import collections
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .event_tree import with_misplaced
from .intervals import MAX_GAPS, MIN_GAP_NS, PROBES, idle_spans
from .usercode import UserCode
from .wire import Gap, GpuActivity, Step

EventType = torch._C._profiler._EventType
TORCH_OP, PY_CALL, PY_C_CALL = EventType.TorchOp.value, EventType.PyCall.value, EventType.PyCCall.value
SKIPPED = (EventType.Allocation.value, EventType.Kineto.value)
USER_SCOPE = torch._C._profiler.RecordScope.USER_SCOPE
OVERLAP_SCAN = 8  # siblings looked at before the bisection point
_BUILTIN = re.compile(r"<built-in (?:method|function) (\w+)")  # as agent/node_visit.py names C calls
Frame = Tuple[str, int, str, bool, str]  # path, line, function, exact line, innermost event


class _Tree:
    """The main thread's events, searched by time (children sorted once per node)."""

    def __init__(self, roots: Sequence[Any], main_tid: int, user: UserCode) -> None:
        self.user = user
        self.top = self._sorted([r for r in roots if r.start_tid == main_tid])
        self._children: Dict[Tuple[int, int, str], Tuple[List[int], List[Any]]] = {}

    @staticmethod
    def _sorted(nodes: Sequence[Any]) -> Tuple[List[int], List[Any]]:
        kept = sorted((n for n in with_misplaced(list(nodes))[0] if n.tag.value not in SKIPPED), key=lambda n: n.start_time_ns)
        return [n.start_time_ns for n in kept], kept

    def children(self, node: Any) -> Tuple[List[int], List[Any]]:
        key = (node.start_time_ns, node.end_time_ns, node.name)
        known = self._children.get(key)
        if known is None:
            known = self._children[key] = self._sorted(node.children)
        return known

    def frame_at(self, t: int) -> Optional[Frame]:
        """The innermost user site and event covering instant ``t`` on the main thread."""
        depth, site, leaf = self._deepest(self.top, t, None, "", 0)
        return (site + (leaf,)) if site is not None else None

    def _covering(self, level: Tuple[List[int], List[Any]], t: int) -> List[Any]:
        """The nodes of one level that cover ``t`` (siblings rarely overlap: only labels such as
        ``ProfilerStep#N`` lie across Python frames, so a few nodes before the bisection suffice)."""
        starts, nodes = level
        i = bisect.bisect_right(starts, t) - 1
        out = []
        for j in range(i, max(-1, i - OVERLAP_SCAN), -1):
            if nodes[j].end_time_ns > t:
                out.append(nodes[j])
        return out

    def _deepest(self, level: Tuple[List[int], List[Any]], t: int, site: Optional[Tuple[str, int, str, bool]], leaf: str,
                 depth: int) -> Tuple[int, Optional[Tuple[str, int, str, bool]], str]:
        best = (depth, site, leaf)
        for node in self._covering(level, t):
            tag = node.tag.value
            here_site, here_leaf = site, leaf
            if tag == PY_CALL or tag == PY_C_CALL:
                fields = node.extra_fields
                caller = fields.caller
                if self.user.is_user(caller.file_name):
                    here_site = (self.user.absolute(caller.file_name), caller.line_number, caller.function_name, True)
                if tag == PY_CALL:
                    callsite = fields.callsite
                    here_leaf = callsite.function_name
                    if self.user.is_user(callsite.file_name):  # inside a user function: its line is not known yet
                        here_site = (self.user.absolute(callsite.file_name), callsite.line_number, callsite.function_name, False)
                else:
                    here_leaf = _builtin(node.name)
            elif tag == TORCH_OP and node.extra_fields.scope != USER_SCOPE:
                here_leaf = node.name
            elif tag == TORCH_OP:  # a label (ProfilerStep#N, record_function): transparent
                found = self._deepest(self.children(node), t, site, leaf, depth)
                best = max(best, found, key=lambda b: b[0])
                continue
            found = self._deepest(self.children(node), t, here_site, here_leaf, depth + 1)
            best = max(best, found, key=lambda b: b[0])
        return best


def _builtin(name: str) -> str:
    """``<built-in method item of Tensor object at 0x...>`` -> ``item``."""
    match = _BUILTIN.match(name)
    return match.group(1) if match else name


def gap_frames(roots: Sequence[Any], gpu: Sequence[GpuActivity], steps: Sequence[Step], main_tid: int, user: UserCode) -> List[Gap]:
    """The ``MAX_GAPS`` largest idle spans (at least ``MIN_GAP_NS``) with the main thread's frame in each."""
    spans = [s for s in idle_spans(gpu, steps) if s[2] - s[1] >= MIN_GAP_NS]
    spans.sort(key=lambda s: (s[1] - s[2], s[1]))
    if not spans:
        return []
    tree = _Tree(roots, main_tid, user)
    out = []
    for position, start, end, next_kernel in spans[:MAX_GAPS]:
        probes = [tree.frame_at(start + (end - start) * (2 * k + 1) // (2 * PROBES)) for k in range(PROBES)]
        votes = collections.Counter(p for p in probes if p is not None)
        if votes:
            (path, line, function, exact, leaf), count = votes.most_common(1)[0]
        else:
            path, line, function, exact, leaf, count = "", 0, "", False, "", 0
        out.append(Gap(position, start, end - start, path, int(line), function, exact, leaf, count, next_kernel))
    return out
