"""The small state the pattern watch (``patterns.py``) keeps: per open event a ``Node``, per pattern and line an ``Agg``.

``Cell`` routes a launch's GPU time to the op that launched it; ``Range`` is an
``Optimizer.step#`` / ``Optimizer.zero_grad#`` range open on a thread; ``Loop``
reads one event's children as periods from an ``aten::select`` to the next and
reports runs of ten or more equal periods (torch's matcher's For Loop Indexing)
through ``hit``, the watch's way of adding an occurrence.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol

MIN_REPEATS = 10  # torch's matcher: ten repeats of the ops that follow an aten::select make a loop
MAX_PERIOD = 32  # ops between two selects beyond which it is not a loop body
PENDING = "pending"  # a launch's receiver not yet known to match (an aten::to before its close)
NO_LAST = (False, "", 0, 0)


class Watch(Protocol):
    """What ``Loop`` needs of the watch: adding an occurrence of a pattern (None outside the recorded steps)."""

    def hit(self, kind: str, chain: int, start: int, ns: int, count: int = 1) -> Optional["Agg"]: ...


class Agg:
    """Time and counts of one pattern at one chain (or of one matmul signature), over the recorded steps."""

    __slots__ = ("ns", "gpu", "tc", "count", "steps", "details")

    def __init__(self) -> None:
        self.ns = 0  # host time
        self.gpu = 0  # GPU time of the kernels and copies it launched
        self.tc = 0  # the part of ``gpu`` in Tensor-Core kernels
        self.count = 0
        self.steps: set[int] = set()
        self.details: dict[str, Any] = {}


class Cell:
    """Where the GPU time of a launch goes: an ``Agg``, ``PENDING`` (kept here until decided), or None (dropped)."""

    __slots__ = ("agg", "ns", "tc")

    def __init__(self, agg: Any) -> None:
        self.agg, self.ns, self.tc = agg, 0, 0


class Node:
    """An open event, with what the rules need of its last closed child (class attributes: the defaults, so
    that making one per event stays cheap)."""

    nchild = 0
    tail = False  # the last-child path below ends in (or passes) a fill
    tail_dims = ""  # the sizes of that fill
    last_name = ""
    last_flag = False
    last = NO_LAST  # the last closed child: (ends in a fill, its sizes, start, end)
    prev = NO_LAST  # the sibling closed just before this opened
    flag = False  # copy_: keeps the dtype; _to_copy / to: copies that way; _single_tensor_*: a range counted it
    memcpy = False  # a cudaMemcpy* ran under it
    cell: Optional[Cell] = None
    hit: Optional[Agg] = None  # its duration and one count go there at its close
    loop: Optional["Loop"] = None
    conv = -1  # a convolution with a bias under it: the conv's chain
    after_conv: Optional[tuple[int, int, int]] = None  # a child was a conv with a bias: (chain, start, ns)
    zero_grad = False  # inside a zero_grad frame

    def __init__(self, entry: Any, name: str, kind: int, facts: str) -> None:
        self.entry, self.name, self.kind, self.facts = entry, name, kind, facts


class Range:
    """An ``Optimizer.step#`` or ``Optimizer.zero_grad#`` range open on a thread."""

    __slots__ = ("kind", "cls", "start", "end", "chain", "ops", "foreach", "frame")

    def __init__(self, kind: str, cls: str, start: int, end: int, chain: int) -> None:
        self.kind, self.cls, self.start, self.end, self.chain = kind, cls, start, end, chain
        self.ops = 0  # per-tensor ops (outermost ops in the range)
        self.foreach = False
        self.frame = ""  # the _single_tensor_* function seen in it


class Loop:
    """One event's children read as periods, each from an ``aten::select`` to the next: runs of equal periods."""

    __slots__ = ("period", "repeats", "run_start", "run_end", "chain", "cur", "cur_start", "cur_end", "cur_chain", "ctx")

    def __init__(self) -> None:
        self.period: Optional[tuple[str, ...]] = None
        self.repeats = 0
        self.run_start = self.run_end = 0
        self.chain = 0
        self.cur: Optional[list[str]] = None
        self.cur_start = self.cur_end = 0
        self.cur_chain = 0
        self.ctx = ""

    def select(self, watch: "Watch", entry: Any) -> None:
        if self.cur is not None:
            self._complete(watch)
        self.cur = ["aten::select"]
        self.cur_start, self.cur_end, self.cur_chain = entry.start, entry.end, entry.chain_id
        self.ctx = self.ctx or entry.ctx

    def other(self, watch: "Watch", name: str, end: int) -> None:
        if self.cur is None:
            return
        self.cur.append(name)
        self.cur_end = end
        if len(self.cur) > MAX_PERIOD:
            self.cur = None
            self.flush(watch)

    def _complete(self, watch: "Watch") -> None:
        period = tuple(self.cur or ())
        if period != self.period:
            self.flush(watch)
            self.period, self.run_start, self.chain = period, self.cur_start, self.cur_chain
        self.repeats += 1
        self.run_end = self.cur_end

    def close(self, watch: "Watch") -> None:
        """The parent closed: a last period that begins like the others is one more repeat."""
        if self.cur is not None and self.period is not None and tuple(self.cur) == self.period[:len(self.cur)]:
            self.repeats += 1
            self.run_end = self.cur_end
        self.cur = None
        self.flush(watch)

    def flush(self, watch: "Watch") -> None:
        if self.repeats >= MIN_REPEATS and self.period is not None:
            agg = watch.hit("indexing_loop", self.chain, self.run_start, self.run_end - self.run_start, self.repeats)
            if agg is not None and not agg.details:
                agg.details = {"ops": list(self.period[:8]), "context": self.ctx or "step"}
        self.period, self.repeats = None, 0
