"""Walk the profiler's in-process event tree and charge time to user source sites.

A *site* is either an exact line (``line``: a call made from user code) or a
user function whose line is not known from the tree (``scope``: work reached
through operator slots, or the function's own bytecode time).  Work under a
``scope`` site belongs to a *pending root* (an interval) that the host
resolves to lines with the frame samples.  A *chain* is the list of user
sites from outermost to innermost, which gives inclusive time.

Backward ops are charged to the chain of the forward op with the same
sequence number.  The output is plain JSON-able lists; see ``Collector.result``.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

import torch

from .usercode import UserCode
from .wire import Alloc, Charge, GpuActivity, OpStat, Root, Site, Step, Sync

EventType = torch._C._profiler._EventType
PY_EVENTS = (EventType.PyCall, EventType.PyCCall)
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


class _State:
    """What a node passes to its children."""

    __slots__ = ("chain", "scope", "root", "ctx", "backward", "in_op", "open_ops")

    def __init__(self, chain: Tuple[int, ...], scope: int, root: int, ctx: str, backward: bool, in_op: bool,
                 open_ops: FrozenSet[str] = frozenset()) -> None:
        self.chain, self.scope, self.root, self.ctx, self.backward, self.in_op = chain, scope, root, ctx, backward, in_op
        self.open_ops = open_ops  # names of the ops enclosing this node (nested same-name ops count once in total time)


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

    def __init__(self, user: UserCode, agent_dir: str) -> None:
        self.user = user
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
        self._anchors: Dict[int, Tuple[Tuple[int, ...], int]] = {}
        self._launches: Dict[int, Tuple[Tuple[int, ...], int, int]] = {}
        self._orphans: List[Any] = []
        self._window_start = 0

    # -- public ----------------------------------------------------------
    def collect(self, roots: List[Any]) -> None:
        roots = sorted(roots, key=lambda e: e.start_time_ns)
        self._find_steps(roots)
        if not self.steps:
            return
        first, last = self.steps[0].start_ns, self.steps[-1].end_ns
        self._window_start = first
        start = _State((), -1, -1, "", False, False)
        stack = [(node, start) for node in reversed(roots) if node.end_time_ns > first and node.start_time_ns < last]
        while stack:
            node, state = stack.pop()
            child_state = self._visit(node, state)
            if child_state is not None:
                children = [c for c in node.children if c.end_time_ns > first and c.start_time_ns < last]
                stack.extend((child, child_state) for child in reversed(children))
        for node in self._orphans:
            self._gpu_activity(node, None)

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
        }

    # -- steps -------------------------------------------------------------
    def _find_steps(self, roots: List[Any]) -> None:
        stack = list(roots)
        found = []
        while stack:
            node = stack.pop()
            if node.tag == EventType.TorchOp and node.name.startswith("ProfilerStep#"):
                found.append(Step(int(node.name.split("#", 1)[1]), node.start_time_ns, node.end_time_ns))
                self.main_tid = node.start_tid
                continue
            stack.extend(node.children)
        self.steps = sorted(found, key=lambda s: s.start_ns)
        self._step_starts = [s.start_ns for s in self.steps]

    def _step_of(self, t: int) -> int:
        i = bisect.bisect_right(self._step_starts, t) - 1
        if i < 0 or t >= self.steps[i].end_ns:
            return -1
        return i

    def _split(self, start: int, end: int, children: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
        """Self time of [start, end) minus children, as (step position, ns) pieces."""
        gaps = []
        cursor = start
        for c_start, c_end in children:
            if c_start > cursor:
                gaps.append((cursor, min(c_start, end)))
            cursor = max(cursor, c_end)
        if cursor < end:
            gaps.append((cursor, end))
        pieces: Dict[int, int] = {}
        for g_start, g_end in gaps:
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
    def _visit(self, node: Any, state: _State) -> Optional[_State]:
        tag = node.tag
        if tag == EventType.Allocation:
            self._allocation(node, state)
            return None
        if tag == EventType.Kineto:
            self._kineto(node, state)
            return None
        main = node.start_tid == self.main_tid
        chain, root, ctx, backward = state.chain, state.root, state.ctx, state.backward
        scope = -1
        name = node.name
        if tag in PY_EVENTS:
            fields = node.extra_fields
            caller = fields.caller
            if self.user.is_user(caller.file_name):
                site = self._site("line", caller.file_name, caller.line_number, caller.function_name)
                if not chain or chain[-1] != site:
                    chain = chain + (site,)
                root = -1
            if tag == EventType.PyCall:
                callsite = fields.callsite
                path = self.user.absolute(callsite.file_name)
                name = callsite.function_name
                if node.start_time_ns <= self._window_start:
                    pass  # frames already running when tracing began never end cleanly: no context from them
                elif name == "__next__" and (path.endswith("torch/utils/data/dataloader.py") or path.startswith(self.agent_dir)):
                    if ctx in ("", "optimizer"):  # our step wrapper around the loader's __next__ counts as the wait
                        ctx = "data_loading"
                elif path.startswith(self.agent_dir) or "/torch/profiler/" in path or path.endswith("torch/autograd/profiler.py"):
                    ctx = "profiler"
                elif not ctx and "/torch/optim/" in path:
                    ctx = "optimizer"
                if self.user.is_user(callsite.file_name):
                    scope = self._site("scope", callsite.file_name, callsite.line_number, name)
            else:
                match = _BUILTIN.match(name)
                name = match.group(1) if match else name
        elif tag == EventType.TorchOp:
            if node.extra_fields.scope == USER_SCOPE:
                return None  # record_function ranges (ProfilerStep#N, Optimizer.step#...) are labels, not work
            if state.scope >= 0:  # reached from user code without a Python call: line unknown
                chain = chain + (state.scope,)
                root = len(self.roots)
                self.roots.append(Root(node.start_time_ns, node.end_time_ns))
            if not state.in_op and main:
                self.ops += 1
            seq = node.extra_fields.sequence_number
            if name.startswith(BACKWARD_PREFIX):
                backward = True
                anchor = self._anchors.get(seq) if seq >= 0 else None
                if anchor is not None:
                    chain, root = anchor
                name = name[len(BACKWARD_PREFIX):]
            elif seq >= 0 and not backward and seq not in self._anchors:
                self._anchors[seq] = (chain, root)
            if name.startswith("enumerate(DataLoader)") and ctx in ("", "optimizer"):
                ctx = "data_loading"
            sync = SYNC_OPS.get(name)
            if sync and ctx not in ("host_sync", "data_loading", "profiler"):
                self.syncs.append(Sync(self._step_of(node.start_time_ns), self._chain(chain), root, sync, name, node.duration_time_ns))
                ctx = "host_sync"
        child_ops = False
        intervals = []
        for child in node.children:
            ctag = child.tag
            if ctag == EventType.Allocation or (ctag == EventType.Kineto and not _is_runtime(child.name)):
                continue
            intervals.append((child.start_time_ns, child.end_time_ns))
            child_ops = child_ops or ctag == EventType.TorchOp
        category = ctx or _own_category(tag, child_ops, backward)
        charge_chain, charge_root = chain, root
        if scope >= 0:  # the user function's own bytecode time: line from samples
            charge_chain = chain + (scope,)
            charge_root = len(self.roots)
            self.roots.append(Root(node.start_time_ns, node.end_time_ns))
        intervals.sort()
        own_ns = 0
        for step, ns in self._split(node.start_time_ns, node.end_time_ns, intervals):
            if ns > 0:
                own_ns += ns
                self._charge(step, charge_chain, category, name, charge_root, main, ns)
        open_ops = state.open_ops
        if tag == EventType.TorchOp:
            self._op_stat(node, main, own_ns, state.open_ops, (self._chain(chain), root))
            open_ops = open_ops | {node.name}
        return _State(chain, scope, root, ctx, backward, state.in_op or tag == EventType.TorchOp, open_ops)

    def _op_stat(self, node: Any, main: bool, self_ns: int, open_ops: FrozenSet[str], caller: Tuple[int, int]) -> None:
        """One op call for the operator table: only calls that start inside a recorded step."""
        if self._step_of(node.start_time_ns) < 0:
            return
        duration = node.duration_time_ns
        total = 0 if node.name in open_ops else duration  # an op nested in one of the same name is already in its total
        self.op_table.add(node.name, "cpu", main, self_ns, total, caller, duration)

    def _allocation(self, node: Any, state: _State) -> None:
        fields = node.extra_fields
        chain, root = state.chain, state.root
        if state.scope >= 0:
            chain = chain + (state.scope,)
        device = fields.device
        self.allocs.append(
            Alloc(self._step_of(node.start_time_ns), self._chain(chain), root, node.start_time_ns, int(fields.alloc_size),
                  int(fields.total_allocated), int(fields.ptr), getattr(device, "type", str(device)))
        )

    def _kineto(self, node: Any, state: _State) -> None:
        name = node.name
        if _is_runtime(name):
            self._launches[node.correlation_id] = (state.chain, state.root, node.start_time_ns)
            main = node.start_tid == self.main_tid
            step = self._step_of(node.start_time_ns)
            sync = CUDA_SYNCS.get(name)
            if sync and state.ctx != "data_loading":
                self.syncs.append(Sync(step, self._chain(state.chain), state.root, sync, name, node.duration_time_ns))
                category = "host_sync"
            else:
                category = state.ctx or ("launch_overhead" if "Launch" in name else "compute")
            if step >= 0:
                self._charge(step, state.chain, category, name, state.root, main, node.duration_time_ns)
                ns = node.duration_time_ns
                self.op_table.add(name, "cpu", main, ns, ns, (self._chain(state.chain), state.root), ns)
            return
        if state.chain or state.root >= 0:
            self._gpu_activity(node, (state.chain, state.root))
        else:
            self._orphans.append(node)

    def _gpu_activity(self, node: Any, owner: Optional[Tuple[Tuple[int, ...], int]]) -> None:
        launch = self._launches.get(node.correlation_id)
        if owner is None:
            owner = (launch[0], launch[1]) if launch else ((), -1)
        step = self._step_of(launch[2] if launch else node.start_time_ns)
        chain = self._chain(owner[0])
        self.gpu.append(GpuActivity(step, chain, owner[1], node.name, node.start_time_ns, node.duration_time_ns))
        if step >= 0:
            ns = node.duration_time_ns
            self.op_table.add(node.name, "cuda", True, ns, ns, (chain, owner[1]), ns)


def _is_runtime(name: str) -> bool:
    return name.startswith(("cuda", "cu", "hip")) or name == "cuda_sync"


def _own_category(tag: Any, child_ops: bool, backward: bool) -> str:
    return "compute" if tag == EventType.TorchOp else "python_overhead"
