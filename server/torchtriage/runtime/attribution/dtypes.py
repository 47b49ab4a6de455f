"""agent.json's dtype events -> ``DtypeLine`` s: ops that mix float dtypes and the casts they cause, per line."""

from __future__ import annotations

from typing import Any, Protocol

from ..agent.wire import DtypeEvent, Site, read_records
from ..results.profile_data import DtypeLine
from .source_ops import SourceOps


class Placer(Protocol):
    """What reading dtype events needs of ``attribution.Attribution``."""

    sites: list[Site]
    chains: list[list[int]]

    def resolve(self, chain_id: int, root: int, self_us: float = 0.0) -> tuple[list[tuple[list[tuple[str, int, str]], float]], bool]: ...


def read_dtype_lines(raw: dict[str, Any], placer: Placer) -> list[DtypeLine]:
    """The agent's dtype events summed per (line, kind, op, dtypes).

    An op the event tree places only in its function (operator slots: ``h * scale``)
    is placed on the one line of that function where such an operator is used,
    preferring the line that names its wide operand (``source_ops``); otherwise, and
    for everything else, lines come from the chains and samples as for time.  Casts
    inside an op (and in its backward) go to the line of that op."""
    events = read_records(raw.get("dtype_events", []), DtypeEvent)
    source = SourceOps()
    placed: dict[tuple[int, int], tuple[str, int, str]] = {}  # (chain, root) -> line of the op there

    def origin_of(event: DtypeEvent) -> tuple[str, int]:
        if event.origin_path:
            return event.origin_path, event.origin_line
        if event.origin_chain >= 0:
            found, _ = placer.resolve(event.origin_chain, event.origin_root)
            if found:
                path, line, _ = max(found, key=lambda a: a[1])[0][-1]
                return path, line
        return "", 0

    def place(event: DtypeEvent, origin: tuple[str, int]) -> tuple[str, int, str] | None:
        key = (event.chain, event.root)
        if key in placed:
            return placed[key]
        chain = placer.chains[event.chain] if 0 <= event.chain < len(placer.chains) else []
        site = placer.sites[chain[-1]] if chain else None
        where_: tuple[str, int, str] | None = None
        if site is not None and site.kind == "scope":
            hints = {event.origin_name} if event.origin_name else set()
            if not hints and origin[0]:
                hints = {source.assigned_name(*origin)} - {""}
            line = source.line_of(site.path, site.function, site.line, event.op, hints)
            if line is not None:
                where_ = (site.path, line, site.function)
        if where_ is None:
            alternatives, _ = placer.resolve(event.chain, event.root)
            if not alternatives:
                return None
            where_ = max(alternatives, key=lambda a: a[1])[0][-1]
        placed[key] = where_
        return where_

    grouped: dict[tuple[str, int, str, str, str], DtypeLine] = {}
    for event in sorted(events, key=lambda e: e.kind != "mixed"):  # mixed ops first: their casts follow them
        if event.step < 0:
            continue
        origin = origin_of(event) if event.kind == "mixed" else ("", 0)
        found = place(event, origin)
        if found is None:
            continue
        path, line, function = found
        key = (path, line, event.kind, event.op, event.dtypes)
        entry = grouped.get(key)
        if entry is None:
            entry = grouped[key] = DtypeLine(path, line, function, event.kind, event.op, event.dtypes, 0, 0, 0.0)
        entry.count += event.count
        entry.bytes += event.bytes
        entry.cast_us += event.ns / 1000.0
        if origin[0] and not entry.origin_path:
            entry.origin_path, entry.origin_line = origin
    return sorted(grouped.values(), key=lambda d: (d.path, d.line, d.kind, d.op, d.dtypes))
