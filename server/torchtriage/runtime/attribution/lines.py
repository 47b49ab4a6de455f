"""Agent output (``agent.json``) -> ``ProfileData``: time, syncs and memory per source line.

The agent charges work to *chains* of user sites (see ``agent/collect.py``).
Here the innermost ``scope`` sites (a user function whose line the event tree
cannot name) are resolved with the frame samples (``sampling.LineResolver``):
samples taken inside the same interval and function first, then all samples
of that function, leaving out the part of each line's samples that calls the
tree timed exactly already explain (a ``time.sleep`` line is sampled all
through its sleep), and only then the function's own line (with a note in
``LineCost.detail``).  Each line is charged what was measured on it: the
charges of one step add up to at most that step's main-thread time.
"""

from __future__ import annotations

import collections
import os
from typing import Any, Optional

from ..agent.wire import WIRE_VERSION, Alloc, AllocSite, AllocStep, Charge, GpuActivity, OpStat, Root, Site, Step, Sync, is_gpu_annotation, read_records
from ..results.profile_data import (
    CATEGORIES,
    LineCost,
    MemoryLine,
    OpCost,
    MemoryStep,
    ProfileData,
    RunStatus,
    StepTiming,
    SyncPoint,
)
from .compiles import read_compiles
from .device_time import device_work, gpu_bound_steps, sync_waits_on_busy_gpu
from .dtypes import read_dtype_lines
from .samples import FrameSample, LineResolver, read_samples
from ..results.device_facts import facts_from_wire
from .gaps import read_gaps
from .memory import decompose
from .shapes import shape_costs

TOP_NAMES = 5
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "  # as agent/node_visit.py strips it from charge names
UNSAMPLED = "line estimated: no frame sample fell in this function outside calls timed exactly"
STACKLESS = "line from frame samples: the window was recorded without Python frames (--python-frames on records them)"
WORKER_SAMPLED = "runs in DataLoader workers: time is the main thread's wait, split by where the workers were sampled"


class _LineTotals:
    """Accumulates LineCost fields per (path, line, category, device)."""

    def __init__(self) -> None:
        self.self_us: dict[tuple[str, int, str, str], float] = collections.defaultdict(float)
        self.inclusive_us: dict[tuple[str, int, str, str], float] = collections.defaultdict(float)
        self.count: dict[tuple[str, int, str, str], int] = collections.defaultdict(int)
        self.names: dict[tuple[str, int, str, str], collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.function: dict[tuple[str, int], str] = {}
        self.detail: dict[tuple[str, int, str, str], str] = {}

    def add(self, chain: list[tuple[str, int, str]], category: str, name: str, us: float, count: int, device: str, detail: str) -> None:
        path, line, function = chain[-1]
        key = (path, line, category, device)
        self.self_us[key] += us
        self.count[key] += count
        self.names[key][name] += us
        self.function.setdefault((path, line), function)
        if detail:
            self.detail[key] = detail
        for c_path, c_line, c_function in dict.fromkeys(chain):
            self.inclusive_us[(c_path, c_line, category, device)] += us
            self.function.setdefault((c_path, c_line), c_function)

    def costs(self, workers_detail: str) -> list[LineCost]:
        result = []
        for key, inclusive in self.inclusive_us.items():
            path, line, category, device = key
            detail = self.detail.get(key, "")
            if category == "data_loading" and workers_detail and not detail:
                detail = workers_detail
            result.append(
                LineCost(
                    path=path, line=line, category=category, self_us=self.self_us.get(key, 0.0), inclusive_us=inclusive,
                    count=self.count.get(key, 0), top_names=[n for n, _ in self.names[key].most_common(TOP_NAMES)] if key in self.names else [],
                    function=self.function.get((path, line), ""), detail=detail, device=device,
                )
            )
        result.sort(key=lambda c: (-c.self_us, -c.inclusive_us, c.path, c.line, c.category))
        return result


class Attribution:
    """Turns the raw agent data into line costs, sync points and memory figures."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.sites = read_records(raw.get("sites", []), Site)
        self.chains: list[list[int]] = raw.get("chains", [])
        self.charges = read_records(raw.get("charges", []), Charge)
        # agent.json written before the agent left GPU-side annotations out may hold them
        self.gpu = [g for g in read_records(raw.get("gpu", []), GpuActivity) if not is_gpu_annotation(g.name)]
        self.syncs = read_records(raw.get("syncs", []), Sync)
        self.allocs = read_records(raw.get("allocs", []), Alloc)
        interval = (raw.get("meta") or {}).get("sample_interval_s")
        self.resolver = LineResolver(read_samples(raw, "samples"), read_records(raw.get("roots", []), Root), interval)
        # A window recorded without Python frames (agent/window.py): its records carry a root and no site (the
        # frame samples inside or nearest the root name a sync's, a kernel's or an op's line) ...
        self.stackless = (((raw.get("meta") or {}).get("window") or {}).get("python_frames")) is False
        # ... and its lines' time comes from the samples themselves (agent/sampled_lines.py), when it has them
        self.sampled = read_records(raw.get("sampled_charges", []), Charge) if self.stackless else []
        self.resolver.discount(*self._timed_by_site())
        self.root_us: dict[int, float] = collections.defaultdict(float)
        for charge in self.charges:
            if charge.root >= 0 and charge.main:
                self.root_us[charge.root] += charge.ns / 1000.0
        self.lines = _LineTotals()
        self.category_us: dict[str, float] = collections.defaultdict(float)
        self.step_category_us: dict[int, dict[str, float]] = collections.defaultdict(lambda: collections.defaultdict(float))
        self.ops_by_category: dict[str, int] = collections.defaultdict(int)
        self.profiler_us = 0.0
        # (charged name, "cpu" | "cuda") -> user line -> us: where each op's own time went, for the operator table
        self.op_lines: dict[tuple[str, str], collections.Counter[tuple[str, int, str]]] = collections.defaultdict(collections.Counter)

    def _timed_by_site(self) -> tuple[dict[tuple[str, str, int], float], dict[tuple[str, str], float]]:
        """Main-thread time by innermost site: (path, function, line) for calls the tree
        timed exactly, (path, function) for what a function's scope (its own time) got."""
        exact: dict[tuple[str, str, int], float] = collections.defaultdict(float)
        own: dict[tuple[str, str], float] = collections.defaultdict(float)
        for charge in self.charges:
            chain = self.chains[charge.chain] if charge.main and 0 <= charge.chain < len(self.chains) else []
            if not chain:
                continue
            site = self.sites[chain[-1]]
            if site.kind == "line":
                exact[(site.path, site.function, site.line)] += charge.ns / 1000.0
            else:
                own[(site.path, site.function)] += charge.ns / 1000.0
        return exact, own

    def resolve(self, chain_id: int, root: int, self_us: float = 0.0) -> tuple[list[tuple[list[tuple[str, int, str]], float]], bool]:
        """A chain as alternatives of concrete (path, line, function) lists, with weights."""
        sites = [self.sites[i] for i in self.chains[chain_id]] if 0 <= chain_id < len(self.chains) else []
        if not sites:
            if self.stackless and root >= 0:
                frames, found = self.resolver.root_lines(root)
                return [([frame], weight) for frame, weight in frames], found
            return [], True
        prefix = []
        sampled = True
        for site in sites[:-1]:
            weights, ok = self.resolver.weights(site, -1)
            sampled = sampled and ok
            prefix.append((site.path, max(weights, key=lambda w: w[1])[0], site.function))
        last = sites[-1]
        weights, ok = self.resolver.weights(last, root, self_us)
        return [(prefix + [(last.path, line, last.function)], w) for line, w in weights], sampled and ok

    def top_line(self, chain_id: int, root: int) -> Optional[tuple[str, int, str]]:
        """The (path, line, function) a chain most likely ran on (None: no line)."""
        alternatives, _ = self.resolve(chain_id, root)
        return max(alternatives, key=lambda a: a[1])[0][-1] if alternatives else None

    def run(self) -> None:
        for charge in self.charges:
            us = charge.ns / 1000.0
            if charge.category == "profiler":
                if charge.main:
                    self.profiler_us += us
                    self.step_category_us[charge.step]["profiler"] += us
                continue
            if charge.category == "compile":  # torch.compile compiling: not step time (the agent's Step.compile_ns)
                continue
            if charge.main:
                self.category_us[charge.category] += us
                self.step_category_us[charge.step][charge.category] += us
                if "::" in charge.name:
                    self.ops_by_category[charge.category] += charge.count
            if self.sampled:
                continue  # its lines come from the samples (below)
            alternatives, sampled = self.resolve(charge.chain, charge.root, self.root_us.get(charge.root, 0.0))
            if not sampled:
                self.resolver.unresolved_us += us
            detail = (STACKLESS if self.stackless else "") if sampled else UNSAMPLED
            for chain, weight in alternatives:
                self.lines.add(chain, charge.category, charge.name, us * weight, charge.count, "cpu", detail)
                self.op_lines[(charge.name, "cpu")][chain[-1]] += us * weight
        for charge in self.sampled:
            if charge.category in ("profiler", "compile"):
                continue
            for chain, _ in self.resolve(charge.chain, -1)[0]:
                self.lines.add(chain, charge.category, charge.name, charge.ns / 1000.0, charge.count, "cpu", STACKLESS)
                self.op_lines[(charge.name, "cpu")][chain[-1]] += charge.ns / 1000.0
        for kernel in self.gpu:
            alternatives, _ = self.resolve(kernel.chain, kernel.root)
            for chain, weight in alternatives:
                self.lines.add(chain, "compute", kernel.name, kernel.ns / 1000.0 * weight, 1, "cuda", "GPU kernel time")
                if kernel.step >= 0:
                    self.op_lines[(kernel.name, "cuda")][chain[-1]] += kernel.ns / 1000.0 * weight

    def charge_worker_lines(self, samples: list[FrameSample], start_ns: int, end_ns: int) -> int:
        """Hand the main thread's data-loading time to the lines the DataLoader workers were
        sampled on during the recorded steps, in proportion to their samples (the wait stays
        in the loop line's inclusive time, as for a loader without workers).  Returns the
        number of samples used."""
        counts: collections.Counter[tuple[str, int, str]] = collections.Counter(
            (str(s.path), int(s.line), str(s.function)) for s in samples if start_ns <= int(s.time_ns) < end_ns
        )
        total = sum(counts.values())
        waits = [key for key in self.lines.self_us if key[2] == "data_loading" and key[3] == "cpu"]
        wait_us = sum(self.lines.self_us[key] for key in waits)
        if not total or wait_us <= 0:
            return 0
        for key in waits:
            self.lines.self_us[key] = 0.0
        for (path, line, function), n in counts.most_common():
            share = wait_us * n / total
            self.lines.add([(path, line, function)], "data_loading", "worker", share, n, "cpu", WORKER_SAMPLED)
        return total

    def ops(self) -> list[OpCost]:
        """The operator table: each op name with the user line that has most of its own time
        (as the charges resolve it; else the agent's heaviest caller)."""
        out = []
        for op in read_records(self.raw.get("ops", []), OpStat):
            name = op.name[len(BACKWARD_PREFIX):] if op.name.startswith(BACKWARD_PREFIX) else op.name
            lines = self.op_lines.get((name, op.device))
            if lines:
                path, line, function = max(lines.items(), key=lambda kv: (kv[1], kv[0]))[0]
            else:
                alternatives, _ = self.resolve(op.chain, op.root)
                path, line, function = max(alternatives, key=lambda a: a[1])[0][-1] if alternatives else ("", 0, "")
            out.append(OpCost(name=op.name, device=op.device, calls=op.calls, self_us=op.self_ns / 1000.0, total_us=op.total_ns / 1000.0,
                              main_thread=op.main, path=path, line=line, function=function))
        out.sort(key=lambda o: (-o.self_us, -o.total_us, o.name))
        return out

    def sync_points(self) -> list[SyncPoint]:
        grouped: dict[tuple[str, int, str], SyncPoint] = {}
        for sync in self.syncs:
            if sync.step < 0:
                continue  # between recorded steps (the window's edges): counted per recorded step
            alternatives, _ = self.resolve(sync.chain, sync.root)
            if not alternatives:
                continue
            chain, _ = max(alternatives, key=lambda a: a[1])
            path, line, _ = chain[-1]
            point = grouped.setdefault((path, line, sync.kind), SyncPoint(path=path, line=line, kind=sync.kind, count=0, stall_us=0.0, op=sync.op))
            point.count += 1
            point.stall_us += sync.ns / 1000.0
        return sorted(grouped.values(), key=lambda p: (-p.stall_us, -p.count, p.path, p.line))

    def memory(self, device: str) -> tuple[list[MemoryStep], list[MemoryLine]]:
        allocs = sorted((a for a in self.allocs if a.device == device), key=lambda a: a.time_ns)
        steps: dict[int, MemoryStep] = {}
        allocated: dict[tuple[str, int], int] = collections.defaultdict(int)
        live: dict[int, tuple[tuple[str, int], int]] = {}
        cut = self.raw.get("allocs_cut_ns")  # before it the agent summed the allocations (agent/alloc_summary.py)
        if cut is not None:
            for row in read_records(self.raw.get("alloc_steps", []), AllocStep):
                if row.device == device:
                    steps[row.step] = MemoryStep(step=row.step, peak_bytes=row.peak_bytes, end_bytes=row.end_bytes)
            for site in read_records(self.raw.get("alloc_sites", []), AllocSite):
                top = self.top_line(site.chain, site.root) if site.device == device else None
                if top is not None:
                    allocated[top[:2]] += site.bytes
        for alloc in allocs:
            if cut is not None and alloc.time_ns < cut:  # a block allocated before the cut, live at it
                top = self.top_line(alloc.chain, alloc.root)
                if top is not None:
                    live[alloc.ptr] = (top[:2], alloc.size)
                continue
            step, total = alloc.step, alloc.total_allocated
            if step >= 0:
                entry = steps.setdefault(step, MemoryStep(step=step, peak_bytes=total, end_bytes=total))
                entry.peak_bytes = max(entry.peak_bytes, total)
                entry.end_bytes = total
            if alloc.size > 0:
                top = self.top_line(alloc.chain, alloc.root)
                if top is None:
                    continue
                where = top[:2]
                allocated[where] += alloc.size
                live[alloc.ptr] = (where, alloc.size)
            else:
                live.pop(alloc.ptr, None)
        retained: dict[tuple[str, int], int] = collections.defaultdict(int)
        for where, size in live.values():
            retained[where] += size
        lines = [MemoryLine(path=p, line=line, allocated_bytes=b, retained_bytes=retained.get((p, line), 0)) for (p, line), b in allocated.items()]
        lines.sort(key=lambda m: (-m.allocated_bytes, m.path, m.line))
        return [steps[k] for k in sorted(steps)], lines


def build_profile(raw: dict[str, Any], status: Optional[RunStatus] = None, extra: Optional[dict[str, Any]] = None) -> ProfileData:
    """The ProfileData for one agent.json (possibly partial: a failed run still gives what it has)."""
    meta = raw.get("meta", {})
    version = raw.get("wire_version", WIRE_VERSION)
    if version != WIRE_VERSION:
        raise ValueError(f"agent.json wire version {version} is not {WIRE_VERSION}: the agent and this torchtriage differ")
    raw_steps = read_records(raw.get("steps", []), Step)
    origin = raw_steps[0].start_ns if raw_steps else 0
    steps = [StepTiming(index=int(s.index), start_us=(s.start_ns - origin) / 1000.0, end_us=(s.end_ns - origin) / 1000.0) for s in raw_steps]
    attribution = Attribution(raw)
    attribution.run()
    compiles, graph_breaks, compile_us = read_compiles(raw, raw_steps)
    for position, step in enumerate(steps):  # compiling inside a step is not step time
        walked = raw_steps[position].compile_ns / 1000.0  # outermost compile ranges in the event tree
        step.compile_us = round(min(step.end_us - step.start_us, max(compile_us[position], walked)), 3)
    device = str(meta.get("device", "cpu"))
    memory_steps, memory_lines = attribution.memory(device)
    total = sum(s.duration_us for s in steps)
    category_us = {c: round(attribution.category_us.get(c, 0.0), 3) for c in CATEGORIES}
    category_us["idle"] = round(max(0.0, total - sum(category_us.values()) - attribution.profiler_us), 3)
    per_step = []
    for position, step in enumerate(steps):
        raw_times = attribution.step_category_us.get(position, {})
        times = {c: round(raw_times.get(c, 0.0), 3) for c in CATEGORIES}
        times["idle"] = round(max(0.0, step.duration_us - sum(times.values()) - raw_times.get("profiler", 0.0)), 3)
        per_step.append(times)
    work = device_work(steps, attribution.gpu, (extra or {}).get("trace")) if device == "cuda" else {}
    gpu_paced = gpu_bound_steps(steps, work, per_step) if work else 0
    sync_on_busy_us = sync_waits_on_busy_gpu(steps, work, per_step) if work else 0.0
    if gpu_paced or sync_on_busy_us:  # those steps' categories are the GPU's now: the totals follow
        category_us = {c: round(sum(times[c] for times in per_step), 3) for c in CATEGORIES}
    workers = meta.get("loader_workers")
    worker_samples = read_samples(raw, "worker_samples")
    sampled = attribution.charge_worker_lines(worker_samples, raw_steps[0].start_ns, raw_steps[-1].end_ns) if raw_steps else 0
    if not workers:
        workers_detail = ""
    elif sampled:
        workers_detail = f"waits for {workers} DataLoader worker processes; the lines they were sampled on carry the time"
    else:
        workers_detail = f"work happens in {workers} DataLoader worker processes: only the wait for the batch is visible"
    n = max(1, len(steps))
    gpu = attribution.gpu
    info = dict(extra or {})
    info.update(
        samples=len(raw.get("samples", [])),
        worker_samples=sampled,
        sample_interval_s=meta.get("sample_interval_s"),
        profiler_overhead_us=round(attribution.profiler_us, 3),
        unresolved_us=round(attribution.resolver.unresolved_us, 3),
        gpu_busy_us=round(sum(w.busy_us for w in work.values()) if work else sum(g.ns for g in gpu) / 1000.0, 3),
        collect_s=meta.get("collect_s"),
        executable=meta.get("executable"),
    )
    if meta.get("dynamo"):
        info["dynamo"] = meta["dynamo"]
    warnings = list(raw.get("warnings", []))
    if sync_on_busy_us:
        info["sync_wait_on_busy_gpu_us"] = round(sync_on_busy_us, 3)
        warnings.append(
            f"{sync_on_busy_us / n / 1000:.2f} ms a step of waiting in syncs was the GPU running work queued before them: "
            "it counts as compute, since removing the sync would not save it (host_sync keeps the wait the GPU spent idle)"
        )
    if gpu_paced:
        info["gpu_paced_steps"] = gpu_paced
        warnings.append(
            f"the GPU set the pace in {gpu_paced} of {len(steps)} recorded steps (the CPU launched ahead of it): "
            "those steps run to the end of their kernels, and their time is the GPU's (kernels, and idle between them)"
        )
    compiling = [(s.index, s.compile_us) for s in steps if s.compile_us >= 1.0]
    if compiling:
        warnings.append(
            f"torch.compile compiled during {len(compiling)} recorded step(s) ({sum(us for _, us in compiling) / 1000:.0f} ms): "
            "that time is left out of the step times and lines (report.json's compile block has it)"
        )
    agent_status = raw.get("status") or {}
    return ProfileData(
        script=str(meta.get("script", "")),
        argv=list(meta.get("argv", [])),
        cwd=str(meta.get("cwd", "")),
        device=device,
        device_name=str(meta.get("device_name", "")),
        torch_version=str(meta.get("torch_version", "")),
        python=str(meta.get("python", "")),
        step_detection=str(meta.get("step_detection") or "none"),
        window=_window(meta.get("window"), len(steps)),
        user_roots=sorted({str(r).rstrip(os.sep) or os.sep for r in meta.get("user_roots") or []}),
        steps=steps,
        category_us=category_us,
        lines=attribution.lines.costs(workers_detail),
        sync_points=attribution.sync_points(),
        memory_steps=memory_steps,
        memory_lines=memory_lines,
        ops_per_step=float(raw.get("top_level_ops", 0)) / n,
        kernels_per_step=(sum(w.kernels for w in work.values()) if work else len(gpu)) / n,
        loader_workers=workers,
        status=status or RunStatus(**{k: agent_status[k] for k in ("status", "message", "traceback", "exit_code") if k in agent_status}),
        warnings=warnings,
        extra=info,
        ops=attribution.ops(),
        step_category_us=per_step,
        ops_by_category=dict(attribution.ops_by_category),
        compiles=compiles,
        graph_breaks=graph_breaks,
        dtype_lines=read_dtype_lines(raw, attribution),
        shapes=shape_costs(raw, attribution),
        device_facts=facts_from_wire(raw),
        memory_shape=decompose(raw, attribution, device),
        gpu_gaps=read_gaps(raw, origin, read_samples(raw, "samples")),
    )


def _window(raw: Any, steps: int) -> dict[str, Any] | None:
    """report.json's ``window`` from agent.json's ``meta.window`` (None when the agent did not write one)."""
    if not isinstance(raw, dict):
        return None
    half = raw.get("half_width")
    target = raw.get("target_half_width")
    return {
        "adaptive": bool(raw.get("adaptive")),
        "steps": steps,
        "ended_by": str(raw.get("ended_by") or ""),
        "half_width": float(half) if isinstance(half, (int, float)) else None,
        "target_half_width": float(target) if isinstance(target, (int, float)) else None,
        "python_frames": raw.get("python_frames") is not False,  # False: recorded without them, lines from frame samples
    }
