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
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Union

import torch

from .comms import CollectiveIntervals, is_collective
from .intervals import uncovered
from .shapes import SHAPE_OPS, ShapeTable
from .dtypes import DtypeRecorder
from .usercode import UserCode
from .wire import Alloc, Charge, Collective, GpuActivity, OpStat, Root, Site, Step, Sync

EventType = torch._C._profiler._EventType
# Event kinds as ints: comparing the pybind enums costs ~0.5 us each, ``tag.value`` once is cheap
TORCH_OP, PY_CALL, PY_C_CALL = EventType.TorchOp.value, EventType.PyCall.value, EventType.PyCCall.value
ALLOCATION, KINETO = EventType.Allocation.value, EventType.Kineto.value
SYNC_OPS = {"aten::_local_scalar_dense": "item", "aten::item": "item", "aten::nonzero": "nonzero"}
CUDA_SYNCS = {
    "cudaStreamSynchronize": "stream_sync",
    "cudaDeviceSynchronize": "device_sync",
    "cudaEventSynchronize": "event_sync",
    "cuda_sync": "stream_sync",
}
USER_SCOPE = torch._C._profiler.RecordScope.USER_SCOPE
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
_BUILTIN = re.compile(r"<built-in (?:method|function) (\w+)")
PROGRESS_EVERY = 8192  # events between progress reports
STEP_SLACK_NS = 2_000_000  # how far a ProfilerStep may start from the agent's own clock reading around prof.step()
COMPILE_OP = "entire_frame_compile"  # dynamo's range around one frame's compile (also: ops named "... (dynamo_timed)")

# The innermost Python frame enclosing a node: None not known, False library code,
# else (file_name, function_name) of a user frame.
Frame = Union[None, bool, Tuple[str, str]]
Item = Tuple[Any, int, int, int, Optional[List[Any]]]  # node, tag (its ``value``), start_ns, end_ns, children if read: each read once


class _State:
    """What a node passes to its children."""

    __slots__ = ("chain", "scope", "root", "ctx", "backward", "in_op", "open_ops", "main", "frame", "shape")

    def __init__(self, chain: Tuple[int, ...], scope: int, root: int, ctx: str, backward: bool, in_op: bool,
                 open_ops: FrozenSet[str] = frozenset(), main: bool = True, frame: Frame = None, shape: int = -1) -> None:
        self.chain, self.scope, self.root, self.ctx, self.backward, self.in_op = chain, scope, root, ctx, backward, in_op
        self.open_ops = open_ops  # names of the ops enclosing this node (nested same-name ops count once in total time)
        self.main = main  # on the stepping thread (a node's children are on its thread)
        self.frame = frame  # the Python frame calling any Python event below (see ``Frame``)
        self.shape = shape  # the enclosing matmul / convolution in ``Collector.shapes`` (-1: none)


class _OpTable:
    """Per op name (and device, thread): calls, self and total ns inside the recorded steps, and who calls it.

    The caller is the chain with most of the op's time, with the pending root of its
    longest call there (the host prefers the lines the charges resolve to, see attribution).
    """

    def __init__(self) -> None:
        self.stats: Dict[Tuple[str, str, bool], List[int]] = {}  # key -> [calls, self_ns, total_ns]
        self.callers: Dict[Tuple[str, str, bool], Dict[int, List[int]]] = {}  # key -> chain id -> [ns, root, longest ns]

    def add(self, name: str, device: str, main: bool, self_ns: int, total_ns: int, caller: Tuple[int, int], weight: int) -> None:
        key = (name, device, main)
        entry = self.stats.get(key)
        if entry is None:
            entry = self.stats[key] = [0, 0, 0]
            self.callers[key] = {}
        entry[0] += 1
        entry[1] += self_ns
        entry[2] += total_ns
        chain, root = caller
        seen = self.callers[key].setdefault(chain, [0, root, weight])
        seen[0] += weight
        if weight > seen[2]:
            seen[1], seen[2] = root, weight

    def records(self) -> List[OpStat]:
        out = []
        for key, (calls, self_ns, total_ns) in self.stats.items():
            callers = self.callers[key]
            chain = max(callers, key=lambda c: (callers[c][0], -c))
            out.append(OpStat(key[0], key[1], key[2], calls, self_ns, total_ns, chain, callers[chain][1]))
        out.sort(key=lambda r: (-r.self_ns, r.name))
        return out


class Collector:
    """One pass over the tree; ``result()`` returns the raw attribution data."""

    def __init__(self, user: UserCode, agent_dir: str, max_events: int = 0,
                 progress: Optional[Callable[[float], None]] = None, dtypes: Optional[DtypeRecorder] = None) -> None:
        self.user = user
        self.dtypes = dtypes  # records ops mixing float dtypes and casts (needs record_shapes)
        self.max_events = max_events  # 0: no limit
        self.progress = progress  # called with the fraction of the window walked so far
        self.events = 0  # nodes visited
        self.steps_recorded = 0  # steps in the tree (``steps`` may keep fewer: max_events)
        self.main_tid = -1  # the thread of the ProfilerStep events
        self.agent_dir = agent_dir
        self.steps: List[Step] = []
        self._step_starts: List[int] = []
        self.sites: Dict[Tuple[str, str, int, str], int] = {}
        self.chains: Dict[Tuple[int, ...], int] = {}
        self.charges: Dict[Tuple[int, int, str, str, int, bool], List[int]] = {}
        self.roots: List[Root] = []
        self.allocs: List[Alloc] = []
        self.syncs: List[Sync] = []
        self.gpu: List[GpuActivity] = []
        self.ops = 0
        self.op_table = _OpTable()
        self.shapes = ShapeTable()  # matmul / convolution signatures (agent/shapes.py)
        self._anchors: Dict[int, Tuple[Tuple[int, ...], int]] = {}
        self._launches: Dict[int, Tuple[Tuple[int, ...], int, int, int]] = {}
        self._orphans: List[Any] = []
        self._window_start = 0
        self.collectives = CollectiveIntervals()
        self._compile_spans: List[Tuple[int, int]] = []  # outermost compile-context nodes
        self._names: Dict[str, str] = {}  # Python C-call event name -> function name
        self._code: Dict[Tuple[str, str], Tuple[str, bool]] = {}  # (file, function) -> (context kind, user code)

    # -- public ----------------------------------------------------------
    def collect(self, roots: List[Any], step_hints: Optional[List[Tuple[int, int]]] = None) -> None:
        """Walk the tree.  ``step_hints``: (before, after) clock readings around each ``prof.step()``
        that began a recorded step, so the search for ``ProfilerStep#N`` can skip the rest of the tree."""
        roots = sorted(roots, key=lambda e: e.start_time_ns)
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
        boundary = step_ends[0]  # the end of the step the stepping thread's walk is in
        items = [(node, node.tag.value, node.start_time_ns, node.end_time_ns, node.start_tid == self.main_tid) for node in roots]
        items.sort(key=lambda i: not i[4])  # the stepping thread first (stable: then by start): it decides a cut
        stack: List[Tuple[Item, _State]] = [
            ((node, tag, start, end, None), _State((), -1, -1, "", False, False, main=main))
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

    def _count_compiling(self) -> None:
        """Each step's ``compile_ns``: its overlap with the (merged) outermost compile ranges."""
        if not self._compile_spans:
            return
        lows, highs = _merged(self._compile_spans)
        steps = []
        for step in self.steps:
            ns = sum(max(0, min(high, step.end_ns) - max(low, step.start_ns)) for low, high in zip(lows, highs))
            steps.append(step._replace(compile_ns=ns))
        self.steps = steps

    def _keep_steps(self, kept: int) -> None:
        """Drop the steps from ``kept`` on, and what was charged to them."""
        self.steps = self.steps[:kept]
        self._step_starts = self._step_starts[:kept]
        self.charges = {key: value for key, value in self.charges.items() if key[0] < kept}
        self.allocs = [a for a in self.allocs if a.step < kept]
        self.syncs = [s for s in self.syncs if s.step < kept]
        self.gpu = [g for g in self.gpu if g.step < kept]

    def result(self) -> Dict[str, Any]:
        """The records for agent.json (types in ``wire``; each serialises as a JSON array)."""
        sites = sorted(self.sites.items(), key=lambda kv: kv[1])
        chains = sorted(self.chains.items(), key=lambda kv: kv[1])
        return {
            "steps": self.steps,
            "sites": [Site(*key) for key, _ in sites],
            "chains": [list(key) for key, _ in chains],
            "charges": [Charge(s, c, cat, name, root, main, v[0], v[1]) for (s, c, cat, name, root, main), v in self.charges.items()],
            "roots": self.roots,
            "allocs": self.allocs,
            "syncs": self.syncs,
            "gpu": self.gpu,
            "top_level_ops": self.ops,
            "ops": self.op_table.records(),
            "collectives": [Collective(self._step_of(start), name, start, end) for name, start, end in self.collectives.found],
            "shapes": self.shapes.records(),
        }

    # -- steps -------------------------------------------------------------
    def _find_steps(self, roots: List[Any], hints: Optional[List[Tuple[int, int]]] = None) -> None:
        found: List[Tuple[Step, int]] = []
        if hints:  # only nodes around the agent's prof.step() calls can hold a ProfilerStep
            lows, highs = _merged((a - STEP_SLACK_NS, b + STEP_SLACK_NS) for a, b in hints)
            found = self._search_steps(roots, lambda s, e: _overlaps(lows, highs, s, e))
        if not hints or len(found) != len(hints):  # no hints, or the clocks disagree: search the whole tree
            found = self._search_steps(roots, None)
        found.sort(key=lambda f: f[0].start_ns)
        self.steps = [step for step, _ in found]
        self._step_starts = [s.start_ns for s in self.steps]
        if found:
            self.main_tid = found[0][1]

    @staticmethod
    def _search_steps(roots: List[Any], near: Optional[Callable[[int, int], bool]]) -> List[Tuple[Step, int]]:
        """(step, thread) of every ``ProfilerStep#N``; ``near(start, end)``: whether a node may hold one."""
        stack = list(roots)
        found = []
        while stack:
            node = stack.pop()
            tag = node.tag.value
            if tag == TORCH_OP:
                name = node.name
                if name.startswith("ProfilerStep#"):
                    found.append((Step(int(name.split("#", 1)[1]), node.start_time_ns, node.end_time_ns), node.start_tid))
                    continue
            elif tag == ALLOCATION or tag == KINETO:
                continue
            if near is None or near(node.start_time_ns, node.end_time_ns):
                stack.extend(node.children)
        return found

    def _step_of(self, t: int) -> int:
        i = bisect.bisect_right(self._step_starts, t) - 1
        if i < 0 or t >= self.steps[i].end_ns:
            return -1
        return i

    def _split(self, start: int, end: int, children: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
        """Self time of [start, end) minus children, as (step position, ns) pieces."""
        if not children:  # a leaf: most often inside one step
            i = bisect.bisect_right(self._step_starts, start) - 1
            if i >= 0 and end <= self.steps[i].end_ns:
                return [(i, end - start)]
        pieces: Dict[int, int] = {}
        for g_start, g_end in uncovered(start, end, children):
            while g_start < g_end:
                i = bisect.bisect_right(self._step_starts, g_start) - 1
                if i < 0:  # before the first step
                    nxt = self._step_starts[0]
                    g_start = max(g_start, min(nxt, g_end))
                    continue
                s_end = self.steps[i].end_ns
                if g_start >= s_end:
                    nxt = self._step_starts[i + 1] if i + 1 < len(self.steps) else g_end
                    g_start = max(g_start, min(nxt, g_end))
                    continue
                piece_end = min(g_end, s_end)
                pieces[i] = pieces.get(i, 0) + piece_end - g_start
                g_start = piece_end
        return list(pieces.items())

    # -- sites -------------------------------------------------------------
    def _site(self, kind: str, filename: str, line: int, function: str) -> int:
        key = (kind, self.user.absolute(filename), int(line), function)
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = len(self.sites)
        return site

    def _chain(self, chain: Tuple[int, ...]) -> int:
        cid = self.chains.get(chain)
        if cid is None:
            cid = self.chains[chain] = len(self.chains)
        return cid

    def _charge(self, step: int, chain: Tuple[int, ...], category: str, name: str, root: int, main: bool, ns: int) -> None:
        key = (step, self._chain(chain), category, name, root, main)
        entry = self.charges.get(key)
        if entry is None:
            self.charges[key] = [ns, 1]
        else:
            entry[0] += ns
            entry[1] += 1

    # -- the visit -----------------------------------------------------------
    def _visit(self, item: Item, state: _State) -> Optional[Tuple[_State, List[Item]]]:
        """Charge one node; returns what its children get and the children (None: do not descend)."""
        node, tag, start, end, children = item
        if tag == ALLOCATION:
            self._allocation(node, start, state)
            return None
        if tag == KINETO:
            self._kineto(node, start, state)
            return None
        main = state.main
        chain, root, ctx, backward, frame = state.chain, state.root, state.ctx, state.backward, state.frame
        scope = -1
        op_name = ""
        shape = state.shape
        if tag == PY_CALL or tag == PY_C_CALL:
            fields = node.extra_fields
            site = self._caller_site(fields, frame)
            if site >= 0:
                if not chain or chain[-1] != site:
                    chain = chain + (site,)
                root = -1
            if tag == PY_CALL:
                callsite = fields.callsite
                file_name = callsite.file_name
                name = callsite.function_name
                kind, user = self._code_kind(file_name, name)
                if start <= self._window_start:
                    pass  # frames already running when tracing began never end cleanly: no context from them
                elif kind == "loader":
                    if ctx in ("", "optimizer"):  # our step wrapper around the loader's __next__ counts as the wait
                        ctx = "data_loading"
                elif kind == "profiler" or kind == "compile":
                    ctx = kind
                elif kind == "optimizer" and not ctx:
                    ctx = "optimizer"
                if user:
                    scope = self._site("scope", file_name, callsite.line_number, name)
                    frame = (file_name, name)
                else:
                    frame = False
            else:
                name = self._builtin_name(node.name)
        elif tag == TORCH_OP:
            fields = node.extra_fields
            if fields.scope == USER_SCOPE:
                return None  # record_function ranges (ProfilerStep#N, Optimizer.step#...) are labels, not work
            name = op_name = node.name
            if state.scope >= 0:  # reached from user code without a Python call: line unknown
                chain = chain + (state.scope,)
                root = len(self.roots)
                self.roots.append(Root(start, end))
            if not state.in_op and main:
                self.ops += 1
            seq = fields.sequence_number
            if name.startswith(BACKWARD_PREFIX):
                backward = True
                anchor = self._anchors.get(seq) if seq >= 0 else None
                if anchor is not None:
                    chain, root = anchor
                name = name[len(BACKWARD_PREFIX):]
            elif seq >= 0 and not backward and seq not in self._anchors:
                self._anchors[seq] = (chain, root)
            if name in SHAPE_OPS and shape < 0 and self._step_of(start) >= 0:
                shape = self.shapes.enter(name, fields, self._chain(chain), root, end - start)
            if name.startswith("enumerate(DataLoader)") and ctx in ("", "optimizer"):
                ctx = "data_loading"
            elif ctx in ("", "optimizer") and is_collective(name):
                ctx = "communication"
            elif name == COMPILE_OP or name.endswith("(dynamo_timed)"):
                ctx = "compile"
            sync = SYNC_OPS.get(name)
            if sync and ctx not in ("host_sync", "data_loading", "profiler"):
                self.syncs.append(Sync(self._step_of(start), self._chain(chain), root, sync, name, end - start))
                ctx = "host_sync"
            if self.dtypes is not None:
                self.dtypes.op(fields, name, state.in_op, ctx, self._step_of(start), end - start, lambda c=chain: self._chain(c), root)
        else:
            name = node.name
        fold = frame is False and tag == PY_CALL  # a library function: C calls with no children are its own time
        kids: List[Item] = []
        leaves: List[Tuple[Any, int, int]] = []  # C calls with no children: charged here, not pushed
        child_ops = False
        intervals = []
        for child in node.children if children is None else children:
            ctag = child.tag.value
            grandchildren = None
            if ctag == PY_C_CALL:
                grandchildren = child.children
                if not grandchildren and fold:  # its time stays in this node's: no need to know when it ran
                    self.events += 1
                    continue
            kid: Item = (child, ctag, child.start_time_ns, child.end_time_ns, grandchildren)
            if ctag == ALLOCATION or (ctag == KINETO and not _is_runtime(child.name)):
                kids.append(kid)
                continue
            if ctag == PY_C_CALL and not grandchildren:
                leaves.append((child, kid[2], kid[3]))
                intervals.append((kid[2], kid[3]))
                continue
            kids.append(kid)
            intervals.append((kid[2], kid[3]))
            child_ops = child_ops or ctag == TORCH_OP
        if ctx == "compile" and state.ctx != "compile":
            self._compile_spans.append((start, end))
        category = ctx or _own_category(tag, child_ops, backward)
        charge_chain, charge_root = chain, root
        if scope >= 0:  # the user function's own bytecode time: line from samples
            charge_chain = chain + (scope,)
            charge_root = len(self.roots)
            self.roots.append(Root(start, end))
        intervals.sort()
        own_ns = 0
        waited = self._waited(start, end, intervals, ctx) if tag == PY_C_CALL and main else {}
        for step, ns in self._split(start, end, intervals):
            if ns > 0:
                own_ns += ns
                wait = waited.get(step, 0)
                if wait > 0:
                    self._charge(step, charge_chain, "communication", name, charge_root, main, wait)
                if ns > wait:
                    self._charge(step, charge_chain, category, name, charge_root, main, ns - wait)
        open_ops = state.open_ops
        if op_name:
            self._op_stat(op_name, start, end, main, own_ns, open_ops, (self._chain(chain), root))
            open_ops = open_ops | {op_name}
        if leaves:
            self._leaves(leaves, chain, root, ctx, frame, main)
        if not kids:
            return None
        return _State(chain, scope, root, ctx, backward, state.in_op or tag == TORCH_OP, open_ops, main, frame, shape), kids

    def _leaves(self, leaves: List[Tuple[Any, int, int]], chain: Tuple[int, ...], root: int, ctx: str, frame: Frame,
                main: bool) -> None:
        """Charge C calls that call nothing profiled, as ``_visit`` would (their caller is the enclosing frame)."""
        category = ctx or "python_overhead"
        starts, steps = self._step_starts, self.steps
        self.events += len(leaves)
        for child, start, end in leaves:
            site = self._caller_site(child.extra_fields, frame)
            if site >= 0:
                leaf_chain, leaf_root = (chain if chain and chain[-1] == site else chain + (site,)), -1
            else:
                leaf_chain, leaf_root = chain, root
            name = self._builtin_name(child.name)
            if main and self.collectives.lows and self.collectives.meets(start, end):
                waited = self._waited(start, end, [], ctx)
                for step, ns in self._split(start, end, []):
                    wait = min(ns, waited.get(step, 0))
                    if wait > 0:
                        self._charge(step, leaf_chain, "communication", name, leaf_root, main, wait)
                    if ns > wait:
                        self._charge(step, leaf_chain, category, name, leaf_root, main, ns - wait)
                continue
            i = bisect.bisect_right(starts, start) - 1
            if i >= 0 and end <= steps[i].end_ns:
                if end > start:
                    self._charge(i, leaf_chain, category, name, leaf_root, main, end - start)
                continue
            for step, ns in self._split(start, end, []):
                if ns > 0:
                    self._charge(step, leaf_chain, category, name, leaf_root, main, ns)

    def _waited(self, start: int, end: int, children: List[Tuple[int, int]], ctx: str) -> Dict[int, int]:
        """Per step position: own time of a stepping-thread C call spent while a collective ran
        elsewhere (DDP blocking at the end of backward, ``work.wait()``); not inside data loading."""
        if ctx not in ("", "optimizer", "communication") or not self.collectives.lows or not self.collectives.meets(start, end):
            return {}
        waited: Dict[int, int] = {}
        for a, b in self.collectives.inside(start, end, children):
            for step, ns in self._split(a, b, []):
                waited[step] = waited.get(step, 0) + ns
        return waited

    def _caller_site(self, fields: Any, frame: Frame) -> int:
        """The ``line`` site of a Python event's caller, or -1 when the caller is not user code."""
        if frame is False:
            return -1  # called from a library frame
        caller = fields.caller
        if frame is None:
            file_name = caller.file_name
            if not self.user.is_user(file_name):
                return -1
            return self._site("line", file_name, caller.line_number, caller.function_name)
        return self._site("line", frame[0], caller.line_number, frame[1])  # type: ignore[index]

    def _code_kind(self, file_name: str, function: str) -> Tuple[str, bool]:
        """(context the code sets: "loader" | "profiler" | "optimizer" | "compile" | "", whether it is user code)."""
        key = (file_name, function)
        known = self._code.get(key)
        if known is None:
            path = self.user.absolute(file_name)
            if function == "__next__" and (path.endswith("torch/utils/data/dataloader.py") or path.startswith(self.agent_dir)):
                kind = "loader"
            elif path.startswith(self.agent_dir) or "/torch/profiler/" in path or path.endswith("torch/autograd/profiler.py"):
                kind = "profiler"
            elif "/torch/optim/" in path:
                kind = "optimizer"
            elif path.endswith("torch/_dynamo/convert_frame.py"):
                kind = "compile"  # dynamo's frame callback runs only to compile (a cache hit stays in C++)
            else:
                kind = ""
            known = self._code[key] = (kind, self.user.is_user(file_name))
        return known

    def _builtin_name(self, name: str) -> str:
        short = self._names.get(name)
        if short is None:
            match = _BUILTIN.match(name)
            short = self._names[name] = match.group(1) if match else name
        return short

    def _op_stat(self, name: str, start: int, end: int, main: bool, self_ns: int, open_ops: FrozenSet[str],
                 caller: Tuple[int, int]) -> None:
        """One op call for the operator table: only calls that start inside a recorded step."""
        if self._step_of(start) < 0:
            return
        duration = end - start
        total = 0 if name in open_ops else duration  # an op nested in one of the same name is already in its total
        self.op_table.add(name, "cpu", main, self_ns, total, caller, duration)

    def _allocation(self, node: Any, start: int, state: _State) -> None:
        fields = node.extra_fields
        chain, root = state.chain, state.root
        if state.scope >= 0:
            chain = chain + (state.scope,)
        device = fields.device
        chain_id = self._chain(chain)
        self.allocs.append(
            Alloc(self._step_of(start), chain_id, root, start, int(fields.alloc_size),
                  int(fields.total_allocated), int(fields.ptr), getattr(device, "type", str(device)))
        )
        if self.dtypes is not None:
            self.dtypes.allocation(fields, chain_id, root)

    def _kineto(self, node: Any, start: int, state: _State) -> None:
        name = node.name
        if _is_runtime(name):
            self._launches[node.correlation_id] = (state.chain, state.root, start, state.shape)
            main = node.start_tid == self.main_tid
            step = self._step_of(start)
            sync = CUDA_SYNCS.get(name)
            ns = node.duration_time_ns
            if sync and state.ctx != "data_loading":
                self.syncs.append(Sync(step, self._chain(state.chain), state.root, sync, name, ns))
                category = "host_sync"
            else:
                category = state.ctx or ("launch_overhead" if "Launch" in name else "compute")
            if step >= 0:
                self._charge(step, state.chain, category, name, state.root, main, ns)
                self.op_table.add(name, "cpu", main, ns, ns, (self._chain(state.chain), state.root), ns)
            return
        if state.chain or state.root >= 0:
            self._gpu_activity(node, (state.chain, state.root), state.shape)
        else:
            self._orphans.append(node)

    def _gpu_activity(self, node: Any, owner: Optional[Tuple[Tuple[int, ...], int]], shape: int = -1) -> None:
        launch = self._launches.get(node.correlation_id)
        if owner is None:
            owner = (launch[0], launch[1]) if launch else ((), -1)
        if shape < 0 and launch:
            shape = launch[3]
        step = self._step_of(launch[2] if launch else node.start_time_ns)
        chain = self._chain(owner[0])
        self.gpu.append(GpuActivity(step, chain, owner[1], node.name, node.start_time_ns, node.duration_time_ns))
        if step >= 0:
            ns = node.duration_time_ns
            self.op_table.add(node.name, "cuda", True, ns, ns, (chain, owner[1]), ns)
            self.shapes.kernel(shape, ns)


def _merged(intervals: Any) -> Tuple[List[int], List[int]]:
    """Sorted, disjoint intervals covering ``intervals``, as (starts, ends)."""
    lows: List[int] = []
    highs: List[int] = []
    for low, high in sorted(intervals):
        if highs and low <= highs[-1]:
            highs[-1] = max(highs[-1], high)
        else:
            lows.append(low)
            highs.append(high)
    return lows, highs


def _overlaps(lows: List[int], highs: List[int], start: int, end: int) -> bool:
    """Whether [start, end] meets one of the disjoint, sorted intervals [lows[i], highs[i]]."""
    i = bisect.bisect_left(highs, start)
    return i < len(lows) and lows[i] <= end


def _is_runtime(name: str) -> bool:
    return name.startswith(("cuda", "cu", "hip")) or name == "cuda_sync"


def _own_category(tag: int, child_ops: bool, backward: bool) -> str:
    return "compute" if tag == TORCH_OP else "python_overhead"
