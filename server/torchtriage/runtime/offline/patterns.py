"""The facts behind the pattern rules, gathered while the sweep opens and closes a trace's events (``PatternWatch``).

torch's profiler pattern matcher (``torch/profiler/_pattern_matcher.py``) walks a
run's event tree in memory.  A trace on disk has no tree, so the sweep tells this
watch of each event it opens and closes on a thread's stack (``opened``,
``closed``), of each ``record_function`` range (``annotation``) and each GPU
activity (``gpu``); the watch keeps one small node per *open* event (what it
needs of its last closed child and of the sibling before it) and sums what it
finds per (pattern, calling chain), so memory does not grow with the trace.
What it finds, each with its time inside the recorded steps:

* ``created_then_moved``: an ``aten::to`` that copies to the GPU (a
  ``cudaMemcpy*`` under it) whose ``_to_copy`` -> ``copy_`` keeps the dtype,
  called right after a call that ended filling a tensor
  (``fill_``/``zero_``/``normal_``/``uniform_`` down its last children:
  ``torch.zeros(n).to("cuda")``), of the same sizes when the trace has them;
  its time is both calls' and the copy's on the GPU;
* ``indexing_loop``: ten or more repeats, among one event's children, of the
  same ops from an ``aten::select`` to the next (``t[i] = ...`` in a Python
  loop); its time is the repeats' span;
* ``single_tensor_optimizer``: an ``Optimizer.step#<class>.step`` range of an
  optimizer that has a foreach implementation, with per-tensor ops and no
  ``aten::_foreach_*`` / ``aten::_fused_*`` op in it (with Python frames, also
  the ``_single_tensor_<name>`` function); its time is the range's;
* ``zero_grad_fills``: ``aten::zero_`` called from a ``zero_grad`` frame or an
  ``Optimizer.zero_grad#`` range, not by another op (``aten::zeros``); its time
  is the fills' and their kernels';
* ``conv_bias_before_bn``: an ``aten::conv1d/2d/3d`` with a bias (its third
  input), whose module call (``nn.Module: Conv2d``; else its C call or the op)
  is followed by a batch norm's (``__getattr__`` frames between are skipped);
  its time is the convolution's call;
* ``loader``: each ``enumerate(DataLoader)#<iterator>.__next__`` range on the
  stepping thread (the iterator's class tells whether workers load);
* ``data_parallel`` / ``ddp``: ``DataParallel`` / ``DistributedDataParallel``
  module calls (or their ``*.forward`` ranges in older traces);

and, as the agent's ``shapes`` records, every matmul / convolution signature
with its calls, host time and the GPU time of the kernels it launched (a
kernel belongs to the nearest enclosing op that collects GPU time, through the
launch's correlation id), with the part of it on Tensor Cores
(``diagnosis.device.kernels``).  A chain is the sweep's: its innermost site is
the line the finding goes on.
"""

from __future__ import annotations

from typing import Any, Optional

from ..agent.shapes import SHAPE_OPS
from ..diagnosis.device.kernels import is_tensor_core_kernel
from .events import OP, PY, RUNTIME
from .opfacts import CONVS, INIT_OPS, shape_of
from .pattern_nodes import PENDING, Agg, Cell, Loop, Node, Range
from .steps import StepClock

MIN_OPTIMIZER_OPS = 4  # per-tensor ops in one optimizer step before it counts as a loop over tensors
LAUNCH_DEPTH = 16  # enclosing events searched for the op a launch belongs to
MEMCPY_DEPTH = 8
UNIT_DEPTH = 8  # enclosing events searched for a convolution's module call
FOREACH_OPTIMIZERS = frozenset({"Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "NAdam", "RAdam", "RMSprop",
                                "Rprop", "SGD"})  # torch.optim classes with a foreach (multi-tensor) implementation
FOREACH_OPS = ("aten::_foreach_", "aten::_fused_")
PARALLEL = {"nn.Module: DataParallel": "data_parallel", "nn.Module: DistributedDataParallel": "ddp",
            "DataParallel.forward": "data_parallel", "DistributedDataParallel.forward": "ddp"}
PARALLEL_PREFIXES = tuple(PARALLEL)
BACKENDS = ("nccl:", "gloo:", "mpi:", "ucc:")
BATCH_NORMS = ("batch_norm", "aten::batch_norm", "aten::native_batch_norm", "aten::cudnn_batch_norm")


class PatternWatch:
    """Told of the sweep's events (``opened``, ``closed``, ``annotation``, ``gpu``); ``finish`` at the end."""

    def __init__(self, clock: StepClock) -> None:
        self.clock = clock
        self.hits: dict[tuple[str, int], Agg] = {}  # (pattern, chain id) -> time and counts
        self.shapes: dict[tuple[str, str, str, int], Agg] = {}  # (op, dtype, dims, chain id) -> calls and time
        self.gpu_threads: set[int] = set()
        self.backends: set[str] = set()  # collective libraries named by ops (nccl, gloo...)
        self._launches: dict[int, Cell] = {}  # correlation id -> the receiver of its GPU time
        self._nodes: dict[int, list[Node]] = {}  # a thread's stack (by id) -> its open nodes, a base node first
        self._ranges: dict[int, list[Range]] = {}

    def hit(self, kind: str, chain: int, start: int, ns: int, count: int = 1) -> Optional[Agg]:
        """Add one occurrence of a pattern starting at ``start`` (None, nothing added, outside the recorded steps)."""
        step = self.clock.step_of(start)
        if step < 0:
            return None
        agg = self.hits.get((kind, chain))
        if agg is None:
            agg = self.hits[(kind, chain)] = Agg()
        agg.ns += max(0, ns)
        agg.count += count
        agg.steps.add(step)
        return agg

    # -- the sweep's calls ----------------------------------------------------------------------------------
    def opened(self, th: Any, name: str, a: Any, facts: Any) -> None:
        """The event ``name`` was pushed on ``th.stack`` (``a``: a launch's correlation id; ``facts``: ``opfacts``)."""
        entry = th.stack[-1]
        nodes = self._nodes.get(id(th.stack))
        if nodes is None:
            nodes = self._nodes[id(th.stack)] = [Node(None, "", -1, "")]
        kind = entry.kind
        if kind == RUNTIME:  # a leaf that matters only to the ops above it: no node
            self._launch(nodes, name, a)
            return
        parent = nodes[-1]
        node = Node(entry, name, kind, facts if kind == OP and isinstance(facts, str) else "")
        node.prev = parent.last
        if parent.zero_grad:
            node.zero_grad = True
        nodes.append(node)
        short = entry.name if kind == PY else name
        if parent.after_conv is not None and short != "__getattr__":
            self._after_conv(parent, node, short)
        if kind == OP:
            self._operator(th, node, parent, name)
        elif kind == PY:
            if short == "zero_grad":
                node.zero_grad = True
            elif short.startswith("_single_tensor_"):
                step = self._open_range(id(th.stack), "step", entry.start)
                if step is not None:
                    step.frame, node.flag = short, True
            self._parallel(node, short)

    def closed(self, entry: Any, stack: list[Any]) -> None:
        """``entry`` was popped from ``stack`` (its thread's)."""
        if entry.kind == RUNTIME:
            return
        nodes = self._nodes.get(id(stack))
        if not nodes or len(nodes) < 2:
            return
        node = nodes.pop()
        while node.entry is not entry and len(nodes) > 1:  # never expected: the sweep closes in stack order
            node = nodes.pop()
        if node.entry is entry:
            self._close(node, nodes)

    def annotation(self, th: Any, name: str, start: int, end: int) -> None:
        """A ``record_function`` range on ``th`` (the stepping thread's when lent to it)."""
        chain = th.stack[-1].chain_id if th.stack else 0
        if name.startswith(("Optimizer.step#", "Optimizer.zero_grad#")):
            kind = "step" if name.startswith("Optimizer.step#") else "zero_grad"
            cls = name.split("#", 1)[1].split(".", 1)[0]
            self._live(id(th.stack), start).append(Range(kind, cls, start, end, chain))
        elif name.startswith("enumerate(DataLoader)#") and th.main:
            agg = self.hit("loader", chain, start, end - start)
            if agg is not None and not agg.details:
                agg.details = {"iterator": name.split("#", 1)[1].rsplit(".", 1)[0]}
        elif name in PARALLEL:
            self.hit(PARALLEL[name], chain, start, end - start)
        elif name.startswith(BACKENDS):
            self.backends.add(name.split(":", 1)[0])

    def gpu(self, thread: int, name: str, duration: int, correlation: int) -> None:
        """A kernel, copy or memset on the GPU thread ``thread``, launched by ``correlation``."""
        self.gpu_threads.add(thread)
        cell = self._launches.pop(correlation, None) if correlation >= 0 else None
        if cell is None or cell.agg is None:
            return
        tc = duration if is_tensor_core_kernel(name) else 0
        if cell.agg is PENDING:
            cell.ns += duration
            cell.tc += tc
        else:
            cell.agg.gpu += duration
            cell.agg.tc += tc

    def finish(self) -> None:
        """After the sweep's ``finish``: the ranges and loops still open end here."""
        for key in list(self._ranges):
            for r in self._ranges.pop(key):
                self._end_range(r)
        for nodes in self._nodes.values():
            for node in nodes:
                if node.loop is not None:
                    node.loop.close(self)
                    node.loop = None

    # -- events ---------------------------------------------------------------------------------------------
    def _operator(self, th: Any, node: Node, parent: Node, name: str) -> None:
        entry = node.entry
        in_zero_grad = node.zero_grad
        ranges = self._ranges.get(id(th.stack))
        if ranges:
            for r in self._live(id(th.stack), entry.start):
                if entry.start < r.start:
                    continue
                if r.kind == "zero_grad":
                    in_zero_grad = True
                elif name.startswith(FOREACH_OPS):
                    r.foreach = True
                elif parent.kind != OP:
                    r.ops += 1
        if name in SHAPE_OPS:
            if self.clock.step_of(entry.start) >= 0:
                dtype, dims = shape_of(node.facts)
                key = (name, dtype, dims, entry.chain_id)
                agg = self.shapes.get(key)
                if agg is None:
                    agg = self.shapes[key] = Agg()
                node.cell = Cell(agg)
                node.hit = agg
        elif name == "aten::to":
            node.cell = Cell(PENDING)
        elif name == "aten::zero_" and in_zero_grad and parent.kind != OP:
            agg = self.hit("zero_grad_fills", entry.chain_id, entry.start, 0, 0)
            if agg is not None:
                node.cell = Cell(agg)
                node.hit = agg
        elif name in PARALLEL:
            self._parallel(node, name)
        elif name.startswith(BACKENDS):
            self.backends.add(name.split(":", 1)[0])

    def _parallel(self, node: Node, name: str) -> None:
        if not name.startswith(PARALLEL_PREFIXES):  # almost every event
            return
        for prefix, kind in PARALLEL.items():
            if name.startswith(prefix):
                node.hit = self.hit(kind, node.entry.chain_id, node.entry.start, 0, 0)
                return

    def _launch(self, nodes: list[Node], name: str, correlation: Any) -> None:
        if "Memcpy" in name:
            for n in nodes[-MEMCPY_DEPTH:]:
                n.memcpy = True
        if isinstance(correlation, int) and correlation >= 0:
            for n in reversed(nodes[-LAUNCH_DEPTH:]):
                if n.cell is not None:
                    self._launches[correlation] = n.cell
                    return

    def _close(self, node: Node, nodes: list[Node]) -> None:
        parent = nodes[-1]
        entry, name, kind = node.entry, node.name, node.kind
        duration = entry.end - entry.start
        if kind == OP:
            if name == "aten::copy_":
                node.flag = node.facts != "cast"
            elif name == "aten::_to_copy":
                node.flag = node.last_name == "aten::copy_" and node.last_flag
            elif name == "aten::to":
                node.flag = node.last_name == "aten::_to_copy" and node.last_flag
                self._moved(node, parent)
            elif name in CONVS and node.facts == "bias":
                self._conv(node, nodes)
        elif kind == PY and entry.name.startswith("_single_tensor_") and not node.flag:
            agg = self.hit("single_tensor_optimizer", entry.chain_id, entry.start, duration)
            if agg is not None and not agg.details:
                agg.details = {"optimizer": entry.name[len("_single_tensor_"):], "implementation": entry.name}
        if node.hit is not None and self.clock.step_of(entry.start) >= 0:
            node.hit.ns += duration
            node.hit.count += 1
        if node.conv >= 0:
            parent.after_conv = (node.conv, entry.start, duration)
        if node.loop is not None:
            node.loop.close(self)
        # what the parent keeps of its last child
        fill = name in INIT_OPS
        parent.nchild += 1
        parent.tail = fill or node.tail
        parent.tail_dims = node.facts if fill else node.tail_dims
        parent.last_name, parent.last_flag = name, node.flag
        if node.nchild:
            parent.last = (node.tail, node.tail_dims, entry.start, entry.end)
        else:
            parent.last = (fill, node.facts if fill else "", entry.start, entry.end)
        if kind == OP and name == "aten::select":
            if parent.loop is None:
                parent.loop = Loop()
            parent.loop.select(self, entry)
        elif parent.loop is not None:
            parent.loop.other(self, entry.name if kind == PY else name, entry.end)

    def _moved(self, node: Node, parent: Node) -> None:
        """An ``aten::to`` closed: a copy to the GPU of a tensor the call before it filled?"""
        cell = node.cell
        prev = None
        if node.flag and node.memcpy:
            if parent.kind == -1:  # a trace without Python frames: the op is its own call
                prev = node.prev
            elif parent.kind == PY and not parent.entry.py_function:  # the ``.to(...)`` C call
                prev = parent.prev
        matched = prev is not None and prev[0] and (not prev[1] or not node.facts or prev[1] == node.facts)
        agg = None
        if matched and prev is not None:
            agg = self.hit("created_then_moved", node.entry.chain_id, node.entry.start,
                           (prev[3] - prev[2]) + (node.entry.end - node.entry.start))
        if agg is not None and not agg.details:
            agg.details = {"sizes": node.facts}
        if cell is not None:
            if agg is not None:
                agg.gpu += cell.ns
                agg.tc += cell.tc
            cell.agg = agg

    def _conv(self, node: Node, nodes: list[Node]) -> None:
        """A convolution with a bias closed: mark its module call (or C call, or itself) to check what follows."""
        chain = node.entry.chain_id
        for n in reversed(nodes[-UNIT_DEPTH:]):
            if n.kind == PY and n.entry.name.startswith("nn.Module: Conv"):
                n.conv = chain
                return
        parent = nodes[-1]
        if parent.kind == PY and not parent.entry.py_function:
            parent.conv = chain
        else:
            parent.after_conv = (chain, node.entry.start, node.entry.end - node.entry.start)

    def _after_conv(self, parent: Node, node: Node, short: str) -> None:
        chain, start, ns = parent.after_conv or (0, 0, 0)
        parent.after_conv = None
        if short.startswith("nn.Module: BatchNorm") or short in BATCH_NORMS:
            self.hit("conv_bias_before_bn", chain, start, ns)

    # -- optimizer ranges -----------------------------------------------------------------------------------
    def _live(self, key: int, t: int) -> list[Range]:
        """The thread's ranges still open at ``t`` (those that ended are judged now)."""
        ranges = self._ranges.setdefault(key, [])
        if any(r.end <= t for r in ranges):
            for r in [r for r in ranges if r.end <= t]:
                self._end_range(r)
            ranges[:] = [r for r in ranges if r.end > t]
        return ranges

    def _open_range(self, key: int, kind: str, t: int) -> Optional[Range]:
        for r in self._live(key, t):
            if r.kind == kind and r.start <= t:
                return r
        return None

    def _end_range(self, r: Range) -> None:
        if r.kind != "step" or r.foreach or r.cls not in FOREACH_OPTIMIZERS:
            return
        if r.ops >= MIN_OPTIMIZER_OPS or r.frame:
            agg = self.hit("single_tensor_optimizer", r.chain, r.start, r.end - r.start, max(1, r.ops))
            if agg is not None and not agg.details:
                agg.details = {"optimizer": r.cls, "implementation": r.frame or "for-loop"}
