"""What one walk of the event tree records, and the interning that keeps those records small.

``WalkRecords`` holds the state ``Collector`` fills in (steps, charges, pending
roots, allocations, syncs, GPU activity, the operator and shape tables) and
interns the two keys everything is charged to: *sites* (a user line or a user
function's scope) and *chains* (tuples of sites, outermost first); ``_charge``
adds time to one (step, chain, category, name, root, thread) key.  The walk
itself and the output records are in ``collect.py``.  Standard library and torch only.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

from .comms import CollectiveIntervals
from .dtypes import DtypeRecorder
from .shapes import ShapeTable
from .usercode import UserCode
from .wire import Alloc, GpuActivity, OpStat, Root, Step, Sync


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


class WalkRecords:
    """The records of one walk and the site / chain / charge tables (``Collector`` adds the walk)."""

    def __init__(self, user: UserCode, agent_dir: str, dtypes: Optional[DtypeRecorder] = None) -> None:
        self.user = user
        self.dtypes = dtypes  # records ops mixing float dtypes and casts (needs record_shapes)
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
        self.annotations: Set[str] = set()  # names of the record_function ranges met (agent/device_events.py)
        self._window_start = 0
        self.collectives = CollectiveIntervals()
        self._compile_spans: List[Tuple[int, int]] = []  # outermost compile-context nodes
        self._names: Dict[str, str] = {}  # Python C-call event name -> function name
        self._code: Dict[Tuple[str, str], Tuple[str, bool]] = {}  # (file, function) -> (context kind, user code)

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
