"""One sweep over a trace's records in time order: per-thread nesting, contexts, self time per step and line.

The agent walks torch's event tree inside the profiled process
(``agent/node_visit.py``); a trace written to disk has no tree, only intervals,
so each thread keeps a stack of the Python frames, operators and runtime calls
open at the current time.  An event's self time is the time it is on top of
its thread's stack; it is charged, per step, to its category and to the chain
of user lines that called it, with the agent's rules:

* a Python frame or C call: ``python_overhead``; an operator: ``compute``; a
  CUDA runtime call: ``launch_overhead`` for launches, else ``compute``;
* unless a context encloses it: the DataLoader's ``__next__`` and the
  ``enumerate(DataLoader)`` range (``data_loading``), ``torch/optim`` frames and
  ``Optimizer.*#`` ranges (``optimizer``), ``.item()`` / ``nonzero`` ops and CUDA
  synchronize calls (``host_sync``, with a ``Sync`` record), collectives
  (``communication``), the profiler's own frames (``profiler``, left out of the
  step) and torch.compile's compiling (``compile``, left out too);
* a backward op takes the chain of the forward op with its sequence number
  (the last one: an op that makes no grad node leaves the number to the next);
  one the autograd engine runs on a thread of its own (CUDA) is nested, with
  all that thread does inside it, in the stepping thread's open event (the
  ``backward()`` call waiting for it), as torch's event tree nests it (its
  "Fwd thread id"): the stepping thread's time, as in a profiled run;
* time on the stepping thread with no event open (a trace without Python
  frames: the Python between ops) is ``python_overhead``, or the enclosing
  range's context, charged to the line of the range's "Call stack" when it
  has one (1.9-era traces: the ``for`` line of ``enumerate(DataLoader)#``, as
  the agent charges the loader's ``__next__`` to the line that asks for it).

A chain is the list of user call sites, outermost first.  A call made from a
user frame is placed on a line by ``CallSites``; the frame's own time, and a
call it cannot place, on the function's ``def`` line.  In a trace without
Python frames, an operator with a "Call stack" argument (1.9-era kineto, whose
stacks hold each frame's current line) takes its chain from that stack; torch
2.x writes the stack from the same frame events (``verbose``), so with Python
frames there the frames are used.  GPU activity goes to ``DeviceWork``.  The
result has agent.json's keys (``result``).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from ..agent.wire import Alloc, Step, Sync
from .callsites import CallSites
from .collectives import ENQUEUE_PREFIXES, NCCL_KERNEL_PREFIXES, WAIT_CONTEXTS, TraceCollectives, is_collective
from .device import CUDA_SYNCS, SYNC_OPS, DeviceWork
from .events import ANNOT, GPU, MEM, OP, PY, RUNTIME
from .frames import CodeMap, code_kind, parse_frame
from .gaps import GapPlan, covering
from .patterns import PatternWatch
from .ranges import RangeTable
from .steps import StepClock
from .tables import Tables

BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
PENDING_DEPTH = 3  # library frames under an unplaced call whose names may place it (wrapper -> _use_grad -> step)
PENDING_SHARE = 4  # ... when each takes at least a quarter of the call (the optimizer's step: a third of its wrapper)
INITIAL_NS = 50_000  # the frames running when recording began start this close to their caller (2-3 us measured)
COMPILE_OP = "entire_frame_compile"
UNTRACED = "(between traced events)"  # the charge name of stepping-thread time no event covers
UserFrame = tuple[str, int, str, int]  # (local path, line in the trace, function, def line)
FrameInfo = Union[bool, UserFrame, None]  # None: not known; False: library code; else the innermost user frame


class _Entry:
    """An event open on its thread's stack."""

    __slots__ = ("end", "kind", "name", "op", "ctx", "chain", "frame", "in_op", "backward", "start", "acc", "charge_chain",
                 "chain_id", "category", "py_function", "main", "hint", "waited", "shapes", "stack")

    def __init__(self, end: int, kind: int, name: str, ctx: str, chain: tuple[int, ...], frame: FrameInfo, in_op: bool,
                 backward: bool, start: int) -> None:
        self.end, self.kind, self.name, self.ctx, self.chain, self.frame = end, kind, name, ctx, chain, frame
        self.in_op, self.backward, self.start = in_op, backward, start
        self.op = ""  # the name in the operator table ("" none)
        self.acc: dict[int, int] = {}  # step position -> self ns
        self.charge_chain = 0  # chain id its own time is charged to
        self.chain_id = 0
        self.category = ""
        self.py_function = False  # a Python function's frame (not a C call): ops under it are reached without a call
        self.main = False  # on the stepping thread
        self.hint: Optional[tuple[int, int, int]] = None  # (provisional site, depth, call ns): under a call whose line is open
        self.waited: Optional[dict[int, int]] = None  # step position -> own ns inside a collective (stepping-thread C calls)
        self.shapes = ""  # an operator's input shapes (record_shapes; "" none)
        self.stack = ""  # an operator's "Call stack" argument ("" none)


class _Thread:
    __slots__ = ("stack", "cursor", "annotations", "main", "base", "lent_until", "autograd")

    def __init__(self, main: bool) -> None:
        self.stack: list[_Entry] = []
        self.cursor = 0
        self.annotations: list[tuple[int, str, int]] = []  # (end, context, chain id) of the open record_function ranges with one
        self.main = main
        self.base = _Entry(1 << 62, -1, "", "", (), None, False, False, 0)
        self.lent_until = 0  # until then this thread's events run inside the stepping thread's (backward ops)
        self.autograd = False  # the autograd engine's thread: its outermost ops run for the stepping thread


class Sweep:
    """Consumes records in order (``feed``), then ``finish`` and ``result``."""

    def __init__(self, steps: list[Step], main_thread: Optional[int], code: CodeMap, call_stacks: bool = False) -> None:
        self.clock = StepClock(steps)
        self.call_stacks = call_stacks  # take operators' chains from their "Call stack" argument
        self.main_thread = main_thread
        self.code = code
        self.callsites = CallSites()
        self.tables = Tables()
        self.device = DeviceWork(self.clock, self.tables)
        self.collectives = TraceCollectives()  # collective ranges off the stepping thread
        self.ranges = RangeTable(self.clock)  # the stepping thread's record_function ranges, per name
        self.threads: dict[int, _Thread] = {}
        self.watch = PatternWatch(self.clock)  # the pattern rules' facts: told of each event below (patterns.py)
        self.syncs: list[Sync] = []
        self.allocs: list[Alloc] = []
        self.memory_sums: dict[str, int] = {}  # device -> bytes allocated since recording began (traces with no allocator total)
        self.top_level_ops = 0
        self.clamped = 0  # events that outlived the event enclosing them (cut to its end)
        self.function_level = 0  # calls from user frames placed on the def line, not the calling line
        self.script = ""
        self._anchors: dict[int, tuple[int, ...]] = {}  # forward op's sequence number -> chain
        self._old_anchors: dict[int, tuple[int, ...]] = {}
        self._anchor_step = -1
        self._py: dict[str, tuple[str, bool, Optional[UserFrame], str]] = {}  # event name -> (name, builtin, user frame, code kind)
        self._sites: dict[tuple[UserFrame, str, bool], int] = {}
        self._pending: dict[int, list[str]] = {}  # provisional site -> names of the Python functions under the call, outermost first
        self._stacks: dict[str, tuple[int, ...]] = {}
        self.gaps = GapPlan()  # the GPU idle gaps' instants: the stepping thread's open events are kept at each
        self._probe = 0  # the next of them to pass

    # -- the sweep ------------------------------------------------------------------------------------------
    def feed(self, records: Any) -> None:
        instants = self.gaps.instants
        probe = instants[0] if instants else 1 << 62
        for start, neg, kind, _seq, thread, name, a, b, c, d, e in records:
            if start > probe:
                probe = self._look(start)
            if kind == GPU:
                self.device.activity(name, start, -neg, a)
                self.watch.gpu(thread, name, -neg, a)
                if name.startswith(NCCL_KERNEL_PREFIXES):
                    self.collectives.add(name, start, start - neg, record=False)
                continue
            if (kind == ANNOT or kind == OP) and thread != self.main_thread and is_collective(name) \
                    and not name.startswith(ENQUEUE_PREFIXES):
                self.collectives.add(name, start, start - neg)
            th = self.threads.get(thread)
            if th is None:
                th = self.threads[thread] = _Thread(thread == self.main_thread)
                th.cursor = start
            if not th.main and self.main_thread in self.threads:
                if start < th.lent_until:
                    th = self.threads[self.main_thread]
                elif kind == OP and (c > 0 or th.autograd):  # a backward op the engine runs for it
                    if th.stack:  # close what ended on this thread first (a CUDA runtime call the engine made itself)
                        self._advance(th, start)
                    if not th.stack:
                        th.autograd = True
                        th.lent_until = start - neg
                        th = self.threads[self.main_thread]
            self._advance(th, start)
            if kind == ANNOT:
                self.watch.annotation(th, name, start, start - neg)
                if thread == self.main_thread:
                    self.ranges.add(name, start, start - neg)
                context = _range_context(name)
                if context:
                    chain = self.tables.chain(self._stack_chain(b)) if b and self.call_stacks else 0
                    th.annotations.append((start - neg, context, chain))
            elif kind == MEM:
                self._allocation(th, start, a, b, c, d)
            else:
                self._push(th, kind, name, start, start - neg, a, b)
                if e:
                    th.stack[-1].shapes = e
                self.watch.opened(th, name, a, d)

    def _look(self, until: int) -> int:
        """Keep the stepping thread's open events at each gap instant before ``until``; the next instant after."""
        instants, main = self.gaps.instants, self.threads.get(self.main_thread) if self.main_thread is not None else None
        while self._probe < len(instants) and instants[self._probe] < until:
            instant = instants[self._probe]
            self.gaps.covers[instant] = covering(main.stack, instant) if main is not None else []
            self._probe += 1
        return instants[self._probe] if self._probe < len(instants) else 1 << 62

    def finish(self) -> None:
        self._look(1 << 62)
        for th in self.threads.values():
            stack, cursor = th.stack, th.cursor
            while stack:
                entry = stack.pop()
                if entry.end > cursor:
                    self._own(entry, cursor, entry.end)
                    cursor = entry.end
                self._close(entry, stack)
        self.ranges.finish()
        self.place_pending()

    def _advance(self, th: _Thread, t: int) -> None:
        stack, cursor, clock = th.stack, th.cursor, self.clock
        while stack and stack[-1].end <= t:
            entry = stack.pop()
            end = entry.end
            if end > cursor:
                if entry.waited is None and clock.lo <= cursor and end <= clock.hi:  # ``_own``'s most common case, inline
                    acc = entry.acc
                    acc[clock.pos] = acc.get(clock.pos, 0) + end - cursor
                else:
                    self._own(entry, cursor, end)
                cursor = end
            self._close(entry, stack)
        if t > cursor:
            if stack:
                entry = stack[-1]
                if entry.waited is None and clock.lo <= cursor and t <= clock.hi:
                    acc = entry.acc
                    acc[clock.pos] = acc.get(clock.pos, 0) + t - cursor
                else:
                    self._own(entry, cursor, t)
            elif th.main:
                for end in sorted({a[0] for a in th.annotations if a[0] < t}):  # a range's context ends with the range
                    if end > cursor:
                        self._untraced(th, cursor, end)
                        cursor = end
                    th.annotations = [a for a in th.annotations if a[0] > end]
                self._untraced(th, cursor, t)
            cursor = t
        th.cursor = cursor
        if th.annotations and any(a[0] <= t for a in th.annotations):
            th.annotations = [a for a in th.annotations if a[0] > t]

    def _own(self, entry: _Entry, start: int, end: int) -> None:
        acc = entry.acc
        if entry.waited is not None:  # a stepping-thread C call: the part inside a collective is a wait
            for position, ns in self.collectives.waited(self.clock, start, end):
                entry.waited[position] = entry.waited.get(position, 0) + ns
                acc[position] = acc.get(position, 0) - ns
        clock = self.clock
        position = clock.pos if clock.lo <= start and end <= clock.hi else clock.within(start, end)
        if position >= 0:  # inside one step: most events
            acc[position] = acc.get(position, 0) + end - start
            return
        for position, ns in self.clock.split(start, end):
            acc[position] = acc.get(position, 0) + ns

    def _untraced(self, th: _Thread, start: int, end: int) -> None:
        category, chain = th.annotations[-1][1:] if th.annotations else ("python_overhead", 0)
        waited: dict[int, int] = {}  # inside a collective (a trace without Python frames: DDP blocking in backward)
        for position, ns in self.collectives.waited(self.clock, start, end) if category in WAIT_CONTEXTS else ():
            self.tables.charge(position, chain, "communication", UNTRACED, True, ns)
            waited[position] = waited.get(position, 0) + ns
        for position, ns in self.clock.split(start, end):
            if ns > waited.get(position, 0):
                self.tables.charge(position, chain, category, UNTRACED, True, ns - waited.get(position, 0))

    def _close(self, entry: _Entry, stack: list[_Entry]) -> None:
        if entry.kind != RUNTIME:  # the watch keeps no node for a runtime call
            self.watch.closed(entry, stack)
        own = 0
        charge = self.tables.charge
        for position, ns in entry.acc.items():
            own += ns
            if ns:
                charge(position, entry.charge_chain, entry.category, entry.name, entry.main, ns)
        if entry.waited:
            for position, ns in entry.waited.items():
                own += ns
                charge(position, entry.charge_chain, "communication", entry.name, entry.main, ns)
        clock = self.clock
        if entry.op and (clock.lo <= entry.start < clock.hi or clock.step_of(entry.start) >= 0):
            duration = entry.end - entry.start
            if entry.kind == OP:
                total = 0 if any(e.op == entry.op for e in stack) else duration
            else:
                total = own
            self.tables.ops.add(entry.op, "cpu", entry.main, own, total, entry.chain_id, duration)
            if entry.main and self.ranges.stats:
                self.ranges.work_in(entry.op, entry.start, own)
            if entry.shapes:  # a call nested in one of the same op and shapes counted once in the total
                nested = any(e.op == entry.op and e.shapes == entry.shapes for e in stack)
                self.tables.shapes.add(entry.op, entry.shapes, own, 0 if nested else duration)

    # -- events ---------------------------------------------------------------------------------------------
    def _push(self, th: _Thread, kind: int, name: str, start: int, end: int, a: int, b: Any) -> None:
        stack = th.stack
        parent = stack[-1] if stack else th.base
        if end > parent.end:
            end = parent.end
            self.clamped += 1
        ctx = parent.ctx or (th.annotations[-1][1] if th.annotations else "")
        if kind == PY:
            entry = self._python(parent, name, ctx, start, end)
        elif kind == OP:
            entry = self._operator(parent, name, ctx, start, end, a, b, th.main)
        else:
            entry = self._runtime(parent, name, ctx, start, end, a)
        entry.main = th.main
        if th.main and entry.ctx in WAIT_CONTEXTS and (kind == PY and not entry.py_function or name in CUDA_SYNCS):
            entry.waited = {}  # a C call, or a CUDA synchronize: its own time inside a collective is a wait
        stack.append(entry)

    def _python(self, parent: _Entry, name: str, ctx: str, start: int, end: int) -> _Entry:
        short, builtin, user, kind = self._python_info(name)
        chain = self._called(parent, short, kind == "profiler", start)
        if builtin:  # a C call (or a module's call): what it calls is placed on its line, already in the chain
            entry = _Entry(end, PY, short, ctx, chain, False, parent.in_op, parent.backward, start)
        else:
            if start > self.clock.first:  # frames already running when recording began set no context
                if kind == "loader":
                    if ctx in ("", "optimizer"):
                        ctx = "data_loading"
                elif kind in ("profiler", "compile"):
                    ctx = kind
                elif kind == "optimizer" and not ctx:
                    ctx = "optimizer"
            entry = _Entry(end, PY, short, ctx, chain, user if user is not None else False, parent.in_op, parent.backward, start)
            entry.py_function = True
            entry.hint = self._hint(parent, chain, short, user is None, end - start)
        entry.chain_id = self.tables.chain(chain)
        if user is not None and not builtin:
            if not self.script and user[2] == "<module>":
                self.script = user[0]  # the outermost user module: the script that ran
            entry.charge_chain = self.tables.chain(chain + (self.tables.site(user[0], user[3], user[2]),))
        else:
            entry.charge_chain = entry.chain_id
        entry.category = ctx or "python_overhead"
        return entry

    def _operator(self, parent: _Entry, name: str, ctx: str, start: int, end: int, seq: int, stack: str, main: bool) -> _Entry:
        backward = parent.backward
        charge_name = name
        if stack and self.call_stacks:
            chain = self._stack_chain(stack)
        elif parent.py_function and isinstance(parent.frame, tuple):
            chain = self._called(parent, name)  # reached from user code with no Python call: an operator slot
        else:
            chain = parent.chain
        step = self.clock.step_of(start)
        if step != self._anchor_step and step >= 0:
            self._old_anchors, self._anchors, self._anchor_step = self._anchors, {}, step
        if name.startswith(BACKWARD_PREFIX):
            backward = True
            anchor = self._anchors.get(seq, self._old_anchors.get(seq)) if seq >= 0 else None
            if anchor is not None:
                chain = anchor
            charge_name = name[len(BACKWARD_PREFIX):]
        elif seq >= 0 and not backward:  # the last op with the number made the grad node (ops before it made none)
            self._anchors[seq] = chain
        if ctx in ("", "optimizer") and is_collective(name):
            ctx = "communication"
        elif name == COMPILE_OP or name.endswith("(dynamo_timed)"):
            ctx = "compile"
        entry = _Entry(end, OP, charge_name, ctx, chain, parent.frame, True, backward, start)
        entry.stack = stack
        entry.chain_id = self.tables.chain(chain)
        sync = SYNC_OPS.get(name)
        if sync and ctx not in ("host_sync", "data_loading", "profiler"):
            self.syncs.append(Sync(step, entry.chain_id, -1, sync, name, end - start))
            entry.ctx = ctx = "host_sync"
        if main and not parent.in_op and step >= 0:
            self.top_level_ops += 1
        entry.op = name
        entry.charge_chain = entry.chain_id
        entry.category = ctx or "compute"
        return entry

    def _runtime(self, parent: _Entry, name: str, ctx: str, start: int, end: int, correlation: int) -> _Entry:
        entry = _Entry(end, RUNTIME, name, ctx, parent.chain, parent.frame, parent.in_op, parent.backward, start)
        entry.chain_id = entry.charge_chain = self.tables.chain(parent.chain)
        step = self.clock.step_of(start)
        self.device.launch(correlation, entry.chain_id, step)
        sync = CUDA_SYNCS.get(name)
        if sync and ctx != "data_loading":
            self.syncs.append(Sync(step, entry.chain_id, -1, sync, name, end - start))
            entry.category = "host_sync"
        else:
            entry.category = ctx or ("launch_overhead" if "Launch" in name else "compute")
        entry.op = name
        return entry

    def _allocation(self, th: _Thread, time: int, size: int, total: int, ptr: int, device: str) -> None:
        if total < 0:  # no "Total Allocated" (1.9-era traces): the running sum since recording began
            total = self.memory_sums[device] = max(0, self.memory_sums.get(device, 0) + size)
        top = th.stack[-1] if th.stack else th.base
        chain = top.charge_chain if top.kind == PY and top.py_function else top.chain_id
        self.allocs.append(Alloc(self.clock.step_of(time), chain, -1, time, size, total, ptr, device))

    # -- frames and call sites ------------------------------------------------------------------------------
    def _python_info(self, name: str) -> tuple[str, bool, Optional[UserFrame], str]:
        known = self._py.get(name)
        if known is None:
            frame = parse_frame(name)
            if not frame.path:
                known = (frame.function, True, None, "")
            else:
                user = None
                if self.code.is_user(frame.path):
                    local = self.code.local(frame.path)
                    user = (local, frame.line, frame.function, self.callsites.def_line(local, frame.function, frame.line))
                known = (frame.function, False, user, code_kind(frame.path, frame.function))
            self._py[name] = known
        return known

    def _called(self, parent: _Entry, callee: str, profiler: bool = False, start: int = -1) -> tuple[int, ...]:
        """The chain of a call made from ``parent``: its chain plus the calling line, when the caller is user code.
        A call in progress when recording began is on the line its caller's frame was named with (exact): the
        caller is named by a line other than its ``def`` line, and the call began with it (the profiler
        writes the frames running when it starts a few microseconds apart).
        A call no line of the caller's source names gets a provisional site on the ``def`` line, which the
        names of the Python functions it turns out to run may still place (``place_pending``)."""
        frame = parent.frame
        if not isinstance(frame, tuple):
            return parent.chain
        key = (frame, callee, profiler)
        site = self._sites.get(key)
        if frame[1] != frame[3] and 0 <= start - parent.start < INITIAL_NS:
            site = self.tables.site(frame[0], frame[1], frame[2])
        elif site is None:
            line = self.callsites.line(frame[0], frame[2], frame[1], callee, profiler)
            if line is not None:
                site = self.tables.site(frame[0], line, frame[2])
            else:
                site = self.tables.provisional(frame[0], frame[3], frame[2])
                self._pending[site] = [callee]
            self._sites[key] = site
        chain = parent.chain
        return chain if chain and chain[-1] == site else chain + (site,)

    def _hint(self, parent: _Entry, chain: tuple[int, ...], name: str, library: bool, ns: int) -> Optional[tuple[int, int, int]]:
        """Note a library function that takes much of a call whose line is open (a decorator's ``wrapper`` -> ``step``)."""
        if not library or not chain:
            return None
        site = chain[-1]
        if parent.hint is not None and parent.hint[0] == site:
            depth, call_ns = parent.hint[1] + 1, parent.hint[2]
        elif site in self._pending and isinstance(parent.frame, tuple):
            depth, call_ns = 0, ns
        else:
            return None
        if depth > PENDING_DEPTH or ns * PENDING_SHARE < call_ns:
            return None
        names = self._pending[site]
        if name not in names and len(names) < 16:
            names.append(name)
        return (site, depth, call_ns)

    def place_pending(self) -> None:
        """Put each provisional site on the one line that calls a function run under it, else leave it on the def line."""
        by_site = {site: key[0] for key, site in self._sites.items()}
        for site, names in self._pending.items():
            frame = by_site[site]
            profiler = any(key[2] for key, s in self._sites.items() if s == site)
            for name in names:
                line = self.callsites.line(frame[0], frame[2], frame[1], name, profiler)
                if line is not None:
                    self.tables.place(site, line)
                    break
            else:
                self.function_level += 1

    def _stack_chain(self, stack: str) -> tuple[int, ...]:
        """The user sites of a "Call stack" argument (innermost frame first), outermost first."""
        chain = self._stacks.get(stack)
        if chain is None:
            sites = []
            for part in reversed(stack.split(";")):
                frame = parse_frame(part.strip())
                if frame.path and self.code.is_user(frame.path):
                    sites.append(self.tables.site(self.code.local(frame.path), frame.line, frame.function))
            chain = self._stacks[stack] = tuple(sites)
        return chain

    def result(self) -> dict[str, Any]:
        """The records under agent.json's keys (those the trace cannot tell stay empty)."""
        out = self.tables.records()
        out.update(steps=self.clock.steps, roots=[], allocs=self.allocs, syncs=self.syncs, gpu=self.device.gpu,
                   top_level_ops=self.top_level_ops, samples=[], worker_samples=[], strings=[],
                   collectives=self.collectives.records(self.clock))
        return out


def _range_context(name: str) -> str:
    """The context a ``record_function`` range sets for what runs inside it on its thread ("" none)."""
    if name.startswith("enumerate(DataLoader)"):
        return "data_loading"
    if name.startswith("Optimizer.") and "#" in name:
        return "optimizer"
    if is_collective(name):
        return "communication"
    return ""
