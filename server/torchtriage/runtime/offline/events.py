"""Trace events -> compact records, and what one pass over them learns (steps, threads, what was recorded).

Each event the analysis uses becomes one tuple, ``(start_ns, -duration_ns,
kind, seq, thread, name, a, b, c, d, e)``, so that sorting the tuples orders them
by start, an enclosing event before what it encloses (longer first at the same
start), then by ``kind``; ``seq`` (the event's position in the file) keeps the
rest from ever being compared.  The last field, ``e``, is an operator's
"Input Dims" (``record_shapes``) as a short string ("" none, and for every
other kind).  The kinds and their extra fields:

=========  ==================================================================
ANNOT      a ``record_function`` range (``user_annotation``): b = its "Call stack" argument ("" none)
PY         a ``python_function`` frame or C call: no extras
OP         an operator (``cpu_op``; ``Operator`` in 1.9-era traces): a = sequence
           number (-1 none), b = its "Call stack" argument ("" none), c = its
           "Fwd thread id" (> 0: a backward op, run for the thread that ran forward),
           d = the facts of its arguments the pattern rules use (``opfacts``; "" none)
RUNTIME    a CUDA runtime / driver call on the CPU: a = correlation id
MEM        a ``[memory]`` instant: a = bytes (< 0 a free), b = total allocated (-1: not recorded, torch 1.9),
           c = address, d = device ("cpu", "cuda"...)
GPU        a kernel, copy or memset: a = correlation id
=========  ==================================================================

``ProfilerStep#N`` ranges on the CPU are not records: ``TraceScan`` keeps them
as the steps, with the thread that stepped.  Times are integer nanoseconds
(the trace's microseconds times 1000, rounded).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from ..agent.wire import is_gpu_annotation
from .gpu_spans import GpuSpans
from .opfacts import op_facts
from .trace_event import NO_ARGS, TraceEvent

ANNOT, PY, OP, RUNTIME, MEM, GPU = range(6)
STEP_PREFIX = "ProfilerStep#"

Record = tuple  # (start_ns, -duration_ns, kind, seq, thread, name, a, b, c, d, e)
SHAPES_CHARS = 160  # an operator's input shapes beyond this are cut (with an ellipsis)

_CATEGORIES = {  # the trace's category -> kind (``cpu_op`` since torch 1.10, ``Operator`` / ``Runtime`` / ``Kernel`` before)
    **dict.fromkeys(("python_function", "python"), PY),
    **dict.fromkeys(("cpu_op", "operator"), OP),
    "user_annotation": ANNOT,
    **dict.fromkeys(("cuda_runtime", "cuda_driver", "runtime", "privateuse1_runtime", "privateuse1_driver"), RUNTIME),
    **dict.fromkeys(("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"), GPU),
}
_CATEGORIES.update({k.capitalize(): v for k, v in list(_CATEGORIES.items())})
_DEVICE_TYPES = {0: "cpu", 1: "cuda"}  # c10::DeviceType of a [memory] event


def is_label(name: str) -> bool:
    """A ``record_function`` range that older traces file among the operators: labels, not work."""
    return name.startswith(("enumerate(DataLoader)", STEP_PREFIX)) or (name.startswith("Optimizer.") and "#" in name)


@dataclass(frozen=True)
class StepRange:
    number: int
    start_ns: int
    end_ns: int
    thread: int


@dataclass
class TraceScan:
    """What the pass over the events saw: steps, threads, counts per kind, the GPU's busy spans, and the events it skipped."""

    steps: list[StepRange] = field(default_factory=list)
    threads: dict[tuple[Any, Any], int] = field(default_factory=dict)  # (pid, tid) -> thread number
    counts: list[int] = field(default_factory=lambda: [0] * 6)  # kind -> events
    thread_events: collections.Counter[int] = field(default_factory=collections.Counter)  # thread -> PY and OP events
    thread_span: dict[int, list[int]] = field(default_factory=dict)  # thread -> [first start, last end] of its PY / OP events
    call_stacks: int = 0  # operators with a "Call stack" argument
    shapes: int = 0  # operators with an "Input Dims" argument (record_shapes)
    skipped: int = 0  # events that were not objects or had no usable time
    events: int = 0
    names: dict[str, str] = field(default_factory=dict)  # one string object per distinct name
    gpu: GpuSpans = field(default_factory=GpuSpans)  # the GPU's busy spans, for its idle gaps (``gaps``)

    def thread(self, pid: Any, tid: Any) -> int:
        key = (pid, tid)
        number = self.threads.get(key)
        if number is None:
            number = self.threads[key] = len(self.threads)
        return number

    def _name(self, name: str) -> str:
        return self.names.setdefault(name, name)

    def record(self, event: Any) -> Optional[Record]:
        """The record for one trace event (a ``TraceEvent``; None: not used), noting steps and counts on the way."""
        out: list[Record] = []
        self.scan((event,), out.append)
        return out[0] if out else None

    def scan(self, events: Iterable[Any], add: Callable[[Record], Any]) -> None:
        """``record`` for each event in turn, each record passed to ``add``: one loop, as this runs per event
        of traces of millions."""
        threads, names, counts, thread_events, thread_span = self.threads, self.names, self.counts, self.thread_events, self.thread_span
        categories, gpu_add, op_kind, annot = _CATEGORIES, self.gpu.add, OP, ANNOT
        seq = self.events
        try:
            for event in events:
                seq += 1
                if type(event) is not TraceEvent and not isinstance(event, TraceEvent):
                    self.skipped += 1
                    continue
                ph = event.ph
                if ph == "X":
                    try:
                        start = round(float(event.ts) * 1000)
                        duration = round(float(event.dur or 0) * 1000)
                    except (TypeError, ValueError):
                        self.skipped += 1
                        continue
                    if duration < 0:
                        duration = 0
                elif ph == "i" or ph == "I":
                    try:
                        start = round(float(event.ts) * 1000)
                    except (TypeError, ValueError):
                        self.skipped += 1
                        continue
                    if event.name != "[memory]":
                        continue
                    args = event.args
                    counts[MEM] += 1
                    device = args.device_type if args.device_type is not None else 0
                    add((start, 0, MEM, seq, self.thread(event.pid, event.tid), "[memory]", _int(args.bytes),
                         _int(args.total_allocated, -1), _int(args.addr), _DEVICE_TYPES.get(device, str(device)), ""))
                    continue
                else:
                    continue
                category = event.cat
                kind = categories.get(category) if type(category) is str else None
                if kind is None:
                    kind = categories.get(str(category or "").lower())
                    if kind is None:
                        continue  # flows, GPU-side annotations, the trace span, kineto's overhead events
                name = event.name
                if type(name) is not str:
                    name = str(name)
                if kind == op_kind and is_label(name):
                    kind = annot
                thread = threads.get((event.pid, event.tid))
                if thread is None:
                    thread = self.thread(event.pid, event.tid)
                if kind == annot and name.startswith(STEP_PREFIX):
                    number = name[len(STEP_PREFIX):]
                    self.steps.append(StepRange(int(number) if number.isdigit() else len(self.steps), start, start + duration, thread))
                    continue
                counts[kind] += 1
                name = names.setdefault(name, name)
                args = event.args
                if kind == RUNTIME or kind == GPU:
                    if kind == GPU and not is_gpu_annotation(name):
                        gpu_add(start, start + duration, name)
                    correlation = args.correlation
                    add((start, -duration, kind, seq, thread, name,
                         correlation if type(correlation) is int else _int(correlation, -1), 0, 0, 0, ""))
                    continue
                if kind == PY or kind == op_kind:
                    end = start + duration
                    thread_events[thread] += 1
                    span = thread_span.get(thread)
                    if span is None:
                        thread_span[thread] = [start, end]
                    else:
                        if start < span[0]:
                            span[0] = start
                        if end > span[1]:
                            span[1] = end
                    if kind == PY:
                        add((start, -duration, PY, seq, thread, name, 0, 0, 0, 0, ""))
                        continue
                    stack = args.call_stack
                    stack = names.setdefault(stack, stack) if type(stack) is str and stack else ""
                    self.call_stacks += bool(stack)
                    if args is NO_ARGS:
                        add((start, -duration, OP, seq, thread, name, -1, stack, 0, "", ""))
                        continue
                    dims, number, forward = args.input_dims, args.sequence_number, args.fwd_thread_id
                    facts = op_facts(name, args.input_type, dims)
                    add((start, -duration, OP, seq, thread, name, number if type(number) is int else _int(number, -1), stack,
                         forward if type(forward) is int else _int(forward), names.setdefault(facts, facts),
                         self._shapes(dims) if dims is not None else ""))
                    continue
                # ANNOT: 1.9-era ranges (``enumerate(DataLoader)#...``) carry the stack of the line that opened them
                stack = args.call_stack
                add((start, -duration, kind, seq, thread, name, 0, names.setdefault(stack, stack) if type(stack) is str and stack else "",
                     0, 0, ""))
        finally:
            self.events = seq

    def _shapes(self, dims: Any) -> str:
        """An operator's "Input Dims" as one interned string (``[[32, 3, 224, 224], [64, 3, 7, 7], []]``; "" none)."""
        if not isinstance(dims, list):
            return ""
        self.shapes += 1
        text = str(dims)
        if len(text) > SHAPES_CHARS:
            text = text[:SHAPES_CHARS - 1] + "\u2026"
        return self._name(text)

    def main_thread(self) -> Optional[int]:
        """The stepping thread: that of the ``ProfilerStep`` ranges, else the thread with the most Python and op events."""
        if self.steps:
            return collections.Counter(s.thread for s in self.steps).most_common(1)[0][0]
        if self.thread_events:
            return self.thread_events.most_common(1)[0][0]
        return None


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
