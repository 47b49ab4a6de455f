"""Charging one Python or operator node of the event tree to user sites and a category.

``NodeVisitor._visit`` reads a node's fields once, extends the chain with the
user site that called it, picks the context (data loading, optimizer, profiler,
compile, host sync, communication), charges the node's self time per step and
returns what its children inherit; childless C calls are charged in a batch
(``_leaves``), and time a C call spends waiting on a collective elsewhere goes
to ``communication`` (``_waited``).  A layer of ``Collector`` (``collect.py``).
Standard library and torch only.

A window recorded without Python frames (``stackless``, see ``window.py``) has
no Python node to carry a site: there every ``record_function`` range
(``ProfilerStep#N``, the DataLoader's ``enumerate(DataLoader)#...``,
``Optimizer.step#...``) is walked into, its own time (the Python it ran between
ops) is charged to its context, and each range and each outermost op under one
is a root, with an empty chain.  An op shorter than the sampling interval holds
no sample: such ops share one point root per interval (so the roots grow with
the window's length, not with its ops).  The host places what only a root can
say (an op's heaviest line, a sync, a kernel) by the frame samples inside or
nearest it (``attribution.samples``); the lines' time comes from the samples
themselves (``sampled_lines``), with the stepping thread's outermost ops and
ranges kept here for it (``op_spans``, ``range_spans``).
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from .comms import is_collective
from .device_events import DeviceEvents
from .event_tree import ALLOCATION, KINETO, PY_C_CALL, PY_CALL, TORCH_OP, USER_SCOPE, Frame, Item, NodeState, is_runtime
from .shapes import SHAPE_OPS
from .wire import Root, Sync

SYNC_OPS = {"aten::_local_scalar_dense": "item", "aten::item": "item", "aten::nonzero": "nonzero"}
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
_BUILTIN = re.compile(r"<built-in (?:method|function) (\w+)")
COMPILE_OP = "entire_frame_compile"  # dynamo's range around one frame's compile (also: ops named "... (dynamo_timed)")
RANGE_OWN = "(Python between ops)"  # the charge name of a range's own time in a window without Python frames


class NodeVisitor(DeviceEvents):
    """Python calls, C calls and ops: sites, contexts and per-category charges."""

    stackless = False  # the window was recorded without Python frames (set by ``Collector``, with the lists below)
    op_spans: List[Tuple[int, int, str, str]]
    range_spans: List[Tuple[int, int, str]]
    sample_ns = 1_000_000  # the frame sampling interval (``Collector``): shorter ops share a point root per interval

    def _visit(self, item: Item, state: NodeState) -> Optional[Tuple[NodeState, List[Item]]]:
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
        own_category = ""  # the category of the node's own time when its context does not set one ("": by its kind)
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
                self.annotations.add(node.name)  # its mirror on the GPU's timeline is no kernel either
                if not self.stackless:
                    return None  # record_function ranges (ProfilerStep#N, Optimizer.step#...) are labels, not work
                name, ctx, own_category = RANGE_OWN, _range_context(node.name, ctx), "python_overhead"
                root = len(self.roots)  # the Python it ran between ops: the samples inside it name the lines
                self.roots.append(Root(start, end))
            else:
                name = op_name = node.name
                name, chain, root, ctx, backward, shape = self._operator(node, fields, state, chain, root, ctx, backward, shape)
        else:
            name = node.name
        fold = frame is False and tag == PY_CALL  # a library function: C calls with no children are its own time
        kids: List[Item] = []
        leaves: List[Tuple[Any, int, int]] = []  # C calls with no children: charged here, not pushed
        child_ops = False
        intervals = []
        nodes = node.children if children is None else children  # a list of its own: extended below
        misplaced = False
        for child in nodes:
            ctag = child.tag.value
            grandchildren = None
            if ctag == PY_C_CALL:
                grandchildren = child.children
                if not grandchildren and fold:  # its time stays in this node's: no need to know when it ran
                    self.events += 1
                    continue
            kid: Item = (child, ctag, child.start_time_ns, child.end_time_ns, grandchildren)
            if ctag == ALLOCATION or (ctag == KINETO and not is_runtime(child.name)):
                if ctag == KINETO:
                    nested = child.children
                    if nested:  # CPU events the tree hung under a GPU event are this node's (event_tree.with_misplaced)
                        nodes.extend(nested)
                        misplaced = True
                kids.append(kid)
                continue
            if ctag == PY_C_CALL and not grandchildren:
                leaves.append((child, kid[2], kid[3]))
                intervals.append((kid[2], kid[3]))
                continue
            kids.append(kid)
            intervals.append((kid[2], kid[3]))
            child_ops = child_ops or ctag == TORCH_OP
        if misplaced:  # the walk takes a node's children in time order
            kids.sort(key=lambda kid: kid[2])
        if ctx == "compile" and state.ctx != "compile":
            self._compile_spans.append((start, end))
        category = ctx or own_category or _own_category(tag, child_ops, backward)
        if self.stackless and main and tag == TORCH_OP:  # what the stepping thread ran, for its frame samples
            if own_category:
                self.range_spans.append((start, end, category))
            elif not state.in_op:
                self.op_spans.append((start, end, category, name))
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
        in_op = state.in_op or (tag == TORCH_OP and not own_category)  # (a range walked into is no op)
        return NodeState(chain, scope, root, ctx, backward, in_op, open_ops, main, frame, shape), kids

    def _operator(self, node: Any, fields: Any, state: NodeState, chain: Tuple[int, ...], root: int, ctx: str, backward: bool,
                  shape: int) -> Tuple[str, Tuple[int, ...], int, str, bool, int]:
        """An op's charge name, chain, root, context, backward flag and shape record (syncs, anchors and dtypes noted
        on the way)."""
        name, start, end, main = node.name, node.start_time_ns, node.end_time_ns, state.main
        if state.scope >= 0:  # reached from user code without a Python call: line unknown
            chain = chain + (state.scope,)
            root = len(self.roots)
            self.roots.append(Root(start, end))
        elif self.stackless and not state.in_op:  # an outermost op: the samples inside (or nearest) name its line
            root = self._op_root(start, end)
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
        named = _named_context(name, ctx)
        if named != ctx:
            ctx = named
        elif name == COMPILE_OP or name.endswith("(dynamo_timed)"):
            ctx = "compile"
        sync = SYNC_OPS.get(name)
        if sync and ctx not in ("host_sync", "data_loading", "profiler"):
            self.syncs.append(Sync(self._step_of(start), self._chain(chain), root, sync, name, end - start))
            ctx = "host_sync"
        if self.dtypes is not None:
            self.dtypes.op(fields, name, state.in_op, ctx, self._step_of(start), end - start, lambda c=chain: self._chain(c), root)
        return name, chain, root, ctx, backward, shape

    def _op_root(self, start: int, end: int) -> int:
        """The root of an outermost op in a window without Python frames: its own when it is long enough to hold a
        sample, else the point root of its sampling interval (see the module docstring)."""
        if end - start >= self.sample_ns:
            self.roots.append(Root(start, end))
            return len(self.roots) - 1
        slot = (start + end) // 2 // self.sample_ns
        root = self._slot_roots.get(slot)
        if root is None:
            middle = slot * self.sample_ns + self.sample_ns // 2
            root = self._slot_roots[slot] = len(self.roots)
            self.roots.append(Root(middle, middle))
        return root

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


def _own_category(tag: int, child_ops: bool, backward: bool) -> str:
    return "compute" if tag == TORCH_OP else "python_overhead"


def _named_context(name: str, ctx: str) -> str:
    """The context an op's or a range's name sets for what runs inside it: the DataLoader's range, a collective."""
    if ctx not in ("", "optimizer"):
        return ctx
    if name.startswith("enumerate(DataLoader)"):
        return "data_loading"
    return "communication" if is_collective(name) else ctx


def _range_context(name: str, ctx: str) -> str:
    """The context a ``record_function`` range sets (a window without Python frames): also the optimizer's."""
    named = _named_context(name, ctx)
    if named == ctx and not ctx and name.startswith("Optimizer."):
        return "optimizer"
    return named
