"""The tables a trace's sweep fills in, in the agent's wire terms (``agent/wire.py``).

Sites (a user ``line``), chains (tuples of sites, outermost first), charges
(self time per step, chain, category, name and thread) and the operator table
are interned and summed here as the agent's ``WalkRecords`` does in the
profiled process; that module imports torch, this one must not, so the
operator table's rules are restated (``OpTable``: nested calls of the same
name counted once in the total, the caller with most of the time named).
"""

from __future__ import annotations

from typing import Any

from ..agent.wire import Charge, OpStat, Site

Key = tuple[str, str, bool]
SHAPE_GROUPS = 4096  # distinct (op, input shapes) groups kept while sweeping (``ShapeTable``)


class OpTable:
    """Per (op name, device, main thread): calls, self and total ns, and the heaviest calling chain."""

    def __init__(self) -> None:
        self.stats: dict[Key, list[int]] = {}  # [calls, self_ns, total_ns]
        self.callers: dict[Key, dict[int, list[int]]] = {}  # chain -> [ns, root, longest call]

    def add(self, name: str, device: str, main: bool, self_ns: int, total_ns: int, chain: int, duration: int) -> None:
        key = (name, device, main)
        entry = self.stats.get(key)
        if entry is None:
            entry = self.stats[key] = [0, 0, 0]
            self.callers[key] = {}
        entry[0] += 1
        entry[1] += self_ns
        entry[2] += total_ns
        callers = self.callers[key]
        seen = callers.get(chain)
        if seen is None:
            callers[chain] = [duration, -1, duration]
        else:
            seen[0] += duration
            if duration > seen[2]:
                seen[2] = duration

    def records(self) -> list[OpStat]:
        out = []
        for key, (calls, self_ns, total_ns) in self.stats.items():
            callers = self.callers[key]
            chain = max(callers, key=lambda c: (callers[c][0], -c))
            out.append(OpStat(key[0], key[1], key[2], calls, self_ns, total_ns, chain, -1))
        out.sort(key=lambda r: (-r.self_ns, r.name))
        return out


class ShapeTable:
    """Per (op name, input shapes): calls, self and total ns, in bounded memory: past ``limit`` groups the
    half with least self time is dropped and counted (``spilled_groups``, ``spilled_calls``, ``spilled_ns``)."""

    def __init__(self, limit: int = SHAPE_GROUPS) -> None:
        self.limit = limit
        self.stats: dict[tuple[str, str], list[int]] = {}  # [calls, self_ns, total_ns]
        self.spilled_groups = self.spilled_calls = self.spilled_ns = 0

    def add(self, name: str, shapes: str, self_ns: int, total_ns: int) -> None:
        entry = self.stats.get((name, shapes))
        if entry is None:
            if len(self.stats) >= self.limit:
                self._spill()
            entry = self.stats[(name, shapes)] = [0, 0, 0]
        entry[0] += 1
        entry[1] += self_ns
        entry[2] += total_ns

    def _spill(self) -> None:
        ranked = sorted(self.stats.items(), key=lambda kv: -kv[1][1])
        for key, (calls, self_ns, _) in ranked[self.limit // 2:]:
            del self.stats[key]
            self.spilled_groups += 1
            self.spilled_calls += calls
            self.spilled_ns += self_ns

    def block(self, rows: int) -> dict[str, Any]:
        """The ``rows`` groups with most self time, and what was left out (spilled or beyond ``rows``)."""
        ranked = sorted(self.stats.items(), key=lambda kv: (-kv[1][1], kv[0]))
        rest = ranked[rows:]
        return {
            "groups": [[name, shapes, calls, self_ns, total_ns] for (name, shapes), (calls, self_ns, total_ns) in ranked[:rows]],
            "other_groups": self.spilled_groups + len(rest),
            "other_calls": self.spilled_calls + sum(v[0] for _, v in rest),
            "other_self_ns": self.spilled_ns + sum(v[1] for _, v in rest),
        }


class Tables:
    """Sites, chains and charges, interned and summed."""

    def __init__(self) -> None:
        self.sites: dict[tuple[str, str, int, str], int] = {}
        self.chains: dict[tuple[int, ...], int] = {(): 0}
        self.charges: dict[tuple[int, int, str, str, bool], list[int]] = {}
        self.ops = OpTable()
        self.shapes = ShapeTable()
        self.placed: dict[int, tuple[str, int, str]] = {}  # a provisional site -> (path, line, function) decided later

    def provisional(self, path: str, line: int, function: str) -> int:
        """A site whose line is decided after the sweep (``place``); until then it is on ``line``."""
        site = len(self.sites)
        self.sites[("pending", path, site, function)] = site
        self.placed[site] = (path, line, function)
        return site

    def place(self, site: int, line: int) -> None:
        path, _, function = self.placed[site]
        self.placed[site] = (path, line, function)

    def site(self, path: str, line: int, function: str) -> int:
        key = ("line", path, line, function)
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = len(self.sites)
        return site

    def chain(self, chain: tuple[int, ...]) -> int:
        cid = self.chains.get(chain)
        if cid is None:
            cid = self.chains[chain] = len(self.chains)
        return cid

    def charge(self, step: int, chain: int, category: str, name: str, main: bool, ns: int) -> None:
        key = (step, chain, category, name, main)
        entry = self.charges.get(key)
        if entry is None:
            self.charges[key] = [ns, 1]
        else:
            entry[0] += ns
            entry[1] += 1

    def records(self) -> dict[str, Any]:
        """``sites``, ``chains``, ``charges`` and ``ops`` as agent.json holds them."""
        sites = sorted(self.sites.items(), key=lambda kv: kv[1])
        chains = sorted(self.chains.items(), key=lambda kv: kv[1])
        return {
            "sites": [Site("line", *self.placed[site]) if site in self.placed else Site(*key) for key, site in sites],
            "chains": [list(key) for key, _ in chains],
            "charges": [Charge(step, chain, category, name, -1, main, v[0], v[1])
                        for (step, chain, category, name, main), v in self.charges.items()],
            "ops": self.ops.records(),
        }
