"""Walk the profiler's in-process event tree and charge time to user source sites.

A *site* is either an exact line (``line``: a call made from user code) or a
user function whose line is not known from the tree (``scope``: work reached
through operator slots, or the function's own bytecode time).  Work under a
``scope`` site belongs to a *pending root* (an interval) that the host
resolves to lines with the frame samples.  A *chain* is the list of user
sites from outermost to innermost, which gives inclusive time.

Backward ops are charged to the chain of the forward op with the same
sequence number.  Collectives (``comms``): their ops on the stepping thread and
the own time of C calls that waits while one runs on another thread are
charged to ``communication``.  The output is plain JSON-able lists; see ``Collector.result``.
torch.compile's compiling (dynamo's ``entire_frame_compile`` and ``(dynamo_timed)``
ranges, its ``convert_frame`` Python) is charged to the ``compile`` context,
which the host keeps out of the step's categories and lines, like the profiler's own;
each step's ``compile_ns`` is the wall time of the outermost such ranges in it.

The walk reads each node's fields once (every read of a field crosses into
C++ and costs about a microsecond, and Python-heavy steps have hundreds of
thousands of nodes), and knows a Python call's caller from the enclosing
Python frame when that frame is library code.  C functions that library
Python code calls and that call nothing profiled (``random()`` inside
``random.gauss``) are not visited: their time stays in the library function's
own time, which is charged to the same user line.  ``max_events`` bounds it: once
the stepping thread's walk has passed that many events at a step boundary,
the remaining steps are dropped (whole steps; at least one is kept).

``Collector`` is built in layers, each a module of its own: ``event_tree``
(event kinds, the per-node item and state), ``walk_records`` (the records and
the site / chain / charge tables), ``step_timeline`` (finding the steps and
splitting time among them), ``device_events`` (allocations, CUDA runtime calls,
GPU activity) and ``node_visit`` (Python calls and ops); this module holds the
walk itself and the output.
"""

from __future__ import annotations

import bisect
from typing import Any, Callable, Dict, List, Optional, Tuple

from .alloc_summary import summarize_allocs
from .dtypes import DtypeRecorder
from .event_tree import TORCH_OP, USER_SCOPE, EventType, Item, NodeState, with_misplaced
from .node_visit import NodeVisitor
from .sampled_lines import OpSpan, RangeSpan, sampled_charges
from .usercode import UserCode
from .wire import Charge, Collective, Site

__all__ = ["Collector", "EventType", "USER_SCOPE"]  # EventType and USER_SCOPE: tests build trees with them from here

PROGRESS_EVERY = 8192  # events between progress reports


class Collector(NodeVisitor):
    """One pass over the tree; ``result()`` returns the raw attribution data."""

    def __init__(self, user: UserCode, agent_dir: str, max_events: int = 0,
                 progress: Optional[Callable[[float], None]] = None, dtypes: Optional[DtypeRecorder] = None,
                 python_frames: bool = True, sample_interval_s: float = 0.001) -> None:
        super().__init__(user, agent_dir, dtypes)
        self.stackless = not python_frames  # a tree of ops and ranges only (see ``node_visit``)
        self.sample_ns = max(1, int(sample_interval_s * 1e9))
        self._slot_roots: Dict[int, int] = {}  # sampling interval -> the point root its short ops share
        self.op_spans: List[OpSpan] = []  # without frames: the stepping thread's outermost ops, for the samples
        self.range_spans: List[RangeSpan] = []  # ... and its record_function ranges (``sampled_lines``)
        self.max_events = max_events  # 0: no limit
        self.progress = progress  # called with the fraction of the window walked so far

    def collect(self, roots: List[Any], step_hints: Optional[List[Tuple[int, int]]] = None,
                complete_steps: Optional[int] = None) -> None:
        """Walk the tree.  ``step_hints``: (before, after) clock readings around each ``prof.step()``
        that began a recorded step, so the search for ``ProfilerStep#N`` can skip the rest of the tree.
        ``complete_steps``: keep only that many (the script ended inside the last one: it is no step)."""
        roots = sorted(with_misplaced(roots)[0], key=lambda e: e.start_time_ns)
        self._find_steps(roots, step_hints)
        self.steps_recorded = len(self.steps)
        if not self.steps:
            return
        first, last = self.steps[0].start_ns, self.steps[-1].end_ns
        span = max(1, last - first)
        self._window_start = first
        step_ends = [s.end_ns for s in self.steps]
        self.collectives.find(roots, self.main_tid, first, last, TORCH_OP)
        kept = len(self.steps)
        if complete_steps is not None and 0 < complete_steps < kept:
            kept, last = complete_steps, step_ends[complete_steps - 1]
        boundary = step_ends[0]  # the end of the step the stepping thread's walk is in
        items = [(node, node.tag.value, node.start_time_ns, node.end_time_ns, node.start_tid == self.main_tid) for node in roots]
        items.sort(key=lambda i: not i[4])  # the stepping thread first (stable: then by start): it decides a cut
        stack: List[Tuple[Item, NodeState]] = [
            ((node, tag, start, end, None), NodeState((), -1, -1, "", False, False, main=main))
            for node, tag, start, end, main in reversed(items) if end > first and start < last
        ]
        while stack:
            item, state = stack.pop()
            start = item[2]
            if start >= last:
                continue  # pushed before a cut
            if state.main:
                if start >= boundary:  # a step of the stepping thread is complete
                    done = bisect.bisect_right(step_ends, start)
                    if self.max_events and self.events >= self.max_events and 0 < done < kept:
                        kept, last = done, step_ends[done - 1]
                        continue
                    boundary = step_ends[done] if done < len(step_ends) else last
                if self.progress is not None and self.events % PROGRESS_EVERY == 0:
                    self.progress(min(1.0, max(0.0, (start - first) / span)))
            self.events += 1
            visited = self._visit(item, state)
            if visited is not None:
                child_state, kids = visited
                stack.extend((kid, child_state) for kid in reversed(kids) if kid[3] > first and kid[2] < last)
        if kept < len(self.steps):
            self._keep_steps(kept)
        for node in self._orphans:
            self._gpu_activity(node, None)
        self._count_compiling()

    def sampled_charges(self, samples: List[Tuple[int, str, str, int]]) -> List[Charge]:
        """A window without Python frames: line charges from the frame samples (``sampled_lines``); else none."""
        if not self.stackless:
            return []
        return sampled_charges(samples, self.steps, self.op_spans, self.range_spans, self.sample_ns,
                               lambda filename, line, function: self._chain((self._site("line", filename, line, function),)))

    def result(self) -> Dict[str, Any]:
        """The records for agent.json (types in ``wire``; each serialises as a JSON array)."""
        sites = sorted(self.sites.items(), key=lambda kv: kv[1])
        chains = sorted(self.chains.items(), key=lambda kv: kv[1])
        allocs, alloc_steps, alloc_sites, cut = summarize_allocs(self.allocs, self.steps)
        return {
            "steps": self.steps,
            "sites": [Site(*key) for key, _ in sites],
            "chains": [list(key) for key, _ in chains],
            "charges": [Charge(s, c, cat, name, root, main, v[0], v[1]) for (s, c, cat, name, root, main), v in self.charges.items()],
            "roots": self.roots,
            "allocs": allocs,
            "alloc_steps": alloc_steps,
            "alloc_sites": alloc_sites,
            "allocs_cut_ns": cut,  # None: every allocation is listed
            "syncs": self.syncs,
            "gpu": self.gpu,
            "top_level_ops": self.ops,
            "ops": self.op_table.records(),
            "collectives": [Collective(self._step_of(start), name, start, end) for name, start, end in self.collectives.found],
            "shapes": self.shapes.records(),
        }
