"""Bottleneck verdict: where the mean step goes, what dominates, and what to do.

``diagnose(profile, static_findings)`` reads only a ``ProfileData`` (plus the
static findings for cross-links) and returns a ``Diagnosis``: plain data that
``report`` serialises and ``html`` / ``summary`` render.  Nothing here plots.

How the verdict is chosen (documented in REPORT_SCHEMA.md, tested in
tests/runtime/diagnosis/):

1. Shares: each category's time over the active steps divided by the total
   step time (or by the sum of categories when they overlap, as GPU kernels
   and CPU work do), unaccounted time going to ``idle``; shares sum to 1.
2. Launch overhead is derived when attribution did not measure it.  On CPU
   each top-level op costs a fixed dispatch price (``CPU_OP_OVERHEAD_US``)
   whatever its math, so ``ops_per_step * price`` (at most the compute time)
   moves from compute to launch_overhead; and when the step is made of many
   short ops (``MANY_OPS`` or more, under ``SHORT_OP_US`` each counting the
   Python between them) that Python is per-op glue (Module.__call__,
   autograd bookkeeping) which fusion removes, so python_overhead moves too.
   A user's Python loop shows as far more Python per op and stays
   python_overhead.  On CUDA the same two rules apply on top of the measured
   launch calls (the host's side of a GPU op is all dispatch), and when
   launching the kernels takes longer than running them
   (``kernels_per_step * CUDA_LAUNCH_US`` > kernel time) the excess is GPU
   idle caused by launches and moves from idle.
3. A steady memory growth (``growth_is_steady``) wins outright: a leak ends
   the run with an out-of-memory error whatever the step time.
4. Otherwise categories are tried in the order guides investigate them
   (data loading, syncs, launch overhead, Python overhead, communication);
   the first whose share reaches its bar in ``VERDICT_BARS`` wins, even when
   compute is larger.  A bar is the share whose removal gives a speed-up of
   ``1 / (1 - bar)``: cheap, model-free fixes (loader settings, deleting a
   ``.item()``) get lower bars than fixes that change the model.
5. Else compute (with the optimizer) when it is at least ``COMPUTE_BAR``;
   else ``none``.  Other categories above their ``MENTION_BARS`` are listed
   as secondary bottlenecks with their own advice, when they also reach the
   bar in most recorded steps taken one by one (``stability``); those only the
   mean supports are withheld with the reason ("too noisy to call").

Launch overhead counts only the model's ops: with ``num_workers=0`` the
Dataset's indexing and per-sample tensors are top-level ops on the main thread
too (2,000 a step in examples/slow_loader.py against ~30 of the model's), and
their dispatch cost is loading time that ``torch.compile`` cannot remove.
"""

from __future__ import annotations

from typing import Sequence

from ...findings import Finding
from .advice import AdviceContext, advise
from .crosslink import link_evidence, line_codes, runtime_findings, static_links
from .compile_findings import compile_findings
from .dtype_findings import dtype_findings
from .device.findings import device_findings, with_gap_evidence
from .patterns.findings import pattern_findings
from .range_evidence import range_evidence
from ..results.profile_data import CATEGORIES, OK_STATUSES, LineCost, ProfileData
from .stability import holds, loader_pattern, spread, step_range_ms, steps_at_bar
from ..results.verdicts import Diagnosis, Evidence, Hotspot, MemoryTrend, Recommendation, StaticLink, Verdict, Withheld

__all__ = ["Diagnosis", "Evidence", "Hotspot", "MemoryTrend", "Recommendation", "StaticLink", "Verdict", "Withheld", "diagnose"]

# -- thresholds (shares of the mean step) -------------------------------------
# Checked in this order; the first category at or above its bar is the verdict.
VERDICT_BARS: tuple[tuple[str, float], ...] = (
    ("data_loading", 0.30),  # 1.43x if removed; no model change needed
    ("host_sync", 0.15),  # 1.18x; the fix is deleting or batching a call
    ("launch_overhead", 0.30),  # 1.43x; torch.compile / CUDA graphs / batch size
    ("python_overhead", 0.30),  # 1.43x; vectorise the hot Python line
    ("communication", 0.20),  # 1.25x; bucket sizes, overlap, stragglers
)
COMPUTE_BAR = 0.40  # compute (+ optimizer) share needed for a "compute" verdict
# Worth mentioning as secondary (tb-profiler suggests workers from 5 % loader time).
MENTION_BARS: dict[str, float] = {
    "data_loading": 0.05,
    "host_sync": 0.05,
    "launch_overhead": 0.10,
    "python_overhead": 0.10,
    "communication": 0.10,
    "optimizer": 0.10,
}
# ``ops_per_step`` counts top-level ops (not nested in another op).  Fixed cost
# of one through the dispatcher: in a 300-layer 16x16 MLP on batch 4 (math
# negligible) a top-level op took 15-20 us of op time on this project's 2-core
# CPU box; 10 us is the conservative floor.
CPU_OP_OVERHEAD_US = 10.0
MANY_OPS = 200  # top-level ops per step
SHORT_OP_US = 100.0  # (compute + optimizer + python) per op; the MLP above: 40 us, 1024-wide matmuls: 4000 us
CUDA_LAUNCH_US = 10.0  # typical kernel launch latency (5-20 us quoted)

# -- memory growth ------------------------------------------------------------
MIN_MEMORY_STEPS = 4  # fewer points cannot tell a trend from noise
MIN_GROWTH_BYTES_PER_STEP = 16 * 1024  # below this, allocator jitter
MIN_GROWTH_R2 = 0.90  # linear fit of end-of-step allocated bytes
MIN_RISING_FRACTION = 0.75  # share of step-to-step changes that are increases

KINDS = (
    "data_loading",
    "host_sync",
    "python_overhead",
    "launch_overhead",
    "compute",
    "communication",
    "memory_growth",
    "none",
)
def category_shares(profile: ProfileData) -> dict[str, float]:
    """Category -> share of step time (with derived launch overhead); sums to 1 or is empty."""
    total = sum(s.duration_us for s in profile.steps)
    return shares_of(profile, profile.category_us, total, len(profile.steps))


def step_shares(profile: ProfileData) -> list[dict[str, float]]:
    """The same shares for each recorded step alone (empty when the profile has no per-step times)."""
    if len(profile.step_category_us) != len(profile.steps):
        return []
    return [shares_of(profile, times, step.duration_us, 1) for step, times in zip(profile.steps, profile.step_category_us)]


def shares_of(profile: ProfileData, category_us: dict[str, float], total: float, n: int) -> dict[str, float]:
    """Shares of ``total`` (the time of ``n`` steps) for the category times ``category_us``."""
    times = {c: max(0.0, float(category_us.get(c, 0.0))) for c in CATEGORIES}
    if total <= 0:
        return {}
    _derive_launch_overhead(profile, times, n)
    accounted = sum(v for c, v in times.items() if c != "idle")
    times["idle"] = max(times["idle"], total - accounted)
    denominator = max(total, sum(times.values()))
    return {c: times[c] / denominator for c in CATEGORIES}


def model_ops_per_step(profile: ProfileData) -> float:
    """Top-level ops per step outside data loading.

    With ``num_workers=0`` the Dataset's ops (indexing, per-sample tensors) run on the
    main thread and are counted as top-level ops, often far more of them than the
    model has; their dispatch cost is loading time, not launch overhead to compile away.
    Their part is taken out in proportion to the op events seen per category.
    """
    counts = profile.ops_by_category
    total = sum(counts.values())
    if total <= 0:
        return profile.ops_per_step
    return profile.ops_per_step * (total - counts.get("data_loading", 0)) / total


def _derive_launch_overhead(profile: ProfileData, times: dict[str, float], n: int) -> None:
    """Move the fixed per-op / per-launch cost into launch_overhead (see module doc)."""
    cuda = profile.device == "cuda" and profile.kernels_per_step > 0
    if times["launch_overhead"] > 0 and not cuda:
        return  # attribution measured it
    moved = 0.0
    if cuda:  # the launch calls were measured; GPU idle that the launches explain joins them
        excess = profile.kernels_per_step * n * CUDA_LAUNCH_US - times["compute"]
        moved = min(max(0.0, excess), times["idle"])
        times["idle"] -= moved
    # The host's side of each op is dispatch, whatever the math (on a GPU the math is not here at all);
    # a step of many short ops spends its Python on per-op glue that fusion removes (module doc).
    ops_per_step = model_ops_per_step(profile)
    ops = ops_per_step * n
    per_op = (times["compute"] + times["optimizer"] + times["python_overhead"]) / ops if ops else 0.0
    dispatch = min(ops * CPU_OP_OVERHEAD_US, times["compute"])
    times["compute"] -= dispatch
    moved += dispatch
    if ops_per_step >= MANY_OPS and per_op <= SHORT_OP_US:
        moved += times["python_overhead"]
        times["python_overhead"] = 0.0
    times["launch_overhead"] += moved


def hotspots(profile: ProfileData, limit: int = 20) -> list[Hotspot]:
    """Lines by time per step, one entry per (path, line), largest first."""
    total = sum(s.duration_us for s in profile.steps)
    n = max(1, len(profile.steps))
    by_line: dict[tuple[str, int], list[LineCost]] = {}
    for cost in profile.lines:
        by_line.setdefault((cost.path, cost.line), []).append(cost)
    spots = []
    for (path, line), costs in by_line.items():
        self_us = sum(c.self_us for c in costs)
        per_cat: dict[str, float] = {}
        for c in costs:
            per_cat[c.category] = per_cat.get(c.category, 0.0) + c.self_us
        main = max(costs, key=lambda c: c.self_us)
        names = [name for c in sorted(costs, key=lambda c: -c.self_us) for name in c.top_names]
        spots.append(
            Hotspot(
                path=path,
                line=line,
                self_us_per_step=self_us / n,
                share=min(1.0, self_us / total) if total > 0 else 0.0,  # capped: overlapping charges
                category=max(per_cat, key=lambda k: per_cat[k]),
                function=main.function,
                top_names=list(dict.fromkeys(names))[:5],
                detail=next((c.detail for c in costs if c.detail), ""),
            )
        )
    spots.sort(key=lambda h: (-h.self_us_per_step, h.path, h.line))
    return spots[:limit]


def _linear_fit(ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares slope over x = 0..n-1 and its R^2 (1.0 for a flat series)."""
    n = len(ys)
    mean_x, mean_y = (n - 1) / 2, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in range(n))
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(ys))
    syy = sum((y - mean_y) ** 2 for y in ys)
    slope = sxy / sxx if sxx else 0.0
    r2 = (sxy * sxy) / (sxx * syy) if sxx and syy else 1.0
    return slope, r2


def memory_trend(profile: ProfileData) -> MemoryTrend:
    """Peak, growth per step (linear fit of end-of-step bytes) and the steady-growth test."""
    steps = sorted(profile.memory_steps, key=lambda m: m.step)
    top = sorted(profile.memory_lines, key=lambda m: (-m.retained_bytes, -m.allocated_bytes))[:10]
    snapshot = str(profile.extra.get("memory_snapshot", "") or "")
    if not steps:
        return MemoryTrend(0, 0.0, 0.0, False, [], top, snapshot)
    peak = max(m.peak_bytes for m in steps)
    if len(steps) < 2:
        return MemoryTrend(peak, 0.0, 0.0, False, steps, top, snapshot)
    ends = [float(m.end_bytes) for m in steps]
    slope, r2 = _linear_fit(ends)
    rises = sum(1 for a, b in zip(ends, ends[1:]) if b > a) / (len(ends) - 1)
    steady = (
        len(steps) >= MIN_MEMORY_STEPS
        and slope >= MIN_GROWTH_BYTES_PER_STEP
        and r2 >= MIN_GROWTH_R2
        and rises >= MIN_RISING_FRACTION
    )
    return MemoryTrend(peak, slope, r2, steady, steps, top, snapshot)


def choose_kind(shares: dict[str, float], memory: MemoryTrend) -> tuple[str, float]:
    """The verdict's kind and share by the rules in the module docstring."""
    if memory.steady_growth:
        return "memory_growth", memory.window_growth_share
    if not shares:
        return "none", 0.0
    for category, bar in VERDICT_BARS:
        if shares.get(category, 0.0) >= bar:
            return category, shares[category]
    compute = shares.get("compute", 0.0) + shares.get("optimizer", 0.0)
    if compute >= COMPUTE_BAR:
        return "compute", compute
    return "none", 0.0


def _secondary_kinds(
    shares: dict[str, float], primary: str, per_step: list[dict[str, float]], profile: ProfileData
) -> tuple[list[tuple[str, float]], list[Withheld]]:
    """Other categories worth acting on, in investigation order, and those too noisy to call.

    A category qualifies when its share of the mean step reaches its bar *and* it reaches
    the bar in most recorded steps (``stability.holds``); one that only the mean supports
    is withheld with the reason."""
    found, withheld = [], []
    lo, hi = step_range_ms(profile)
    pattern = loader_pattern(profile)
    for category, bar in MENTION_BARS.items():
        share = shares.get(category, 0.0)
        if category == primary or share < bar:
            continue
        if holds(per_step, category, bar):
            found.append((category, share))
            continue
        k, n = steps_at_bar(per_step, category, bar), len(per_step)
        reason = (
            f"{category.replace('_', ' ')} averages {share * 100:.0f}% of the step but reaches its {bar * 100:.0f}% bar "
            f"in only {k} of {n} steps (step times vary {lo:.0f}\u2013{hi:.0f} ms): too noisy to call"
            + ("; the spread is the loader's prefetch rhythm" if pattern else "")
        )
        withheld.append(Withheld(category, share, k, n, reason))
    return found, withheld


def _primary_note(kind: str, per_step: list[dict[str, float]], profile: ProfileData) -> list[Evidence]:
    """A verdict carried by the mean although most steps do not reach its bar."""
    bars = dict(VERDICT_BARS, compute=COMPUTE_BAR)
    if kind not in bars or holds(per_step, kind, bars[kind]) or loader_pattern(profile) is not None:
        return []
    lo, hi = step_range_ms(profile)
    k = steps_at_bar(per_step, kind, bars[kind])
    return [
        Evidence(
            f"Only {k} of {len(per_step)} steps reach the {bars[kind] * 100:.0f}% bar (step times vary {lo:.0f}\u2013{hi:.0f} ms): "
            "the slow steps carry the verdict; profile more steps (--active) to confirm it"
        )
    ]


def _placed(findings: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """The runtime findings on a line, and those with none (a trace without Python frames or call stacks)."""
    return [f for f in findings if f.path and f.span.line > 0], [f for f in findings if not (f.path and f.span.line > 0)]


def _add_unplaced(verdict: Verdict, findings: list[Finding]) -> None:
    """Findings with no line (report.json's findings need one) go into the verdict: the message with its code and
    evidence, then the fixes not already there."""
    actions = {r.action for r in verdict.recommendations}
    for f in findings:
        verdict.evidence.append(Evidence(f"{f.code} ({f.name}): {f.message}"))
        verdict.evidence += [Evidence(e["text"]) for e in f.extra.get("evidence") or [] if not e.get("path")]
        for r in f.extra.get("recommendations") or []:
            if r["action"] not in actions:
                actions.add(r["action"])
                verdict.recommendations.append(Recommendation(r["action"], r["why"], r.get("example", "")))


def diagnose(profile: ProfileData, static_findings: Sequence[Finding] = ()) -> Diagnosis:
    """Break the mean step down, pick the bottleneck, attach evidence, fixes and cross-links."""
    findings = list(static_findings)
    measured = profile.steps_profiled > 0
    ok = profile.status.status in OK_STATUSES and measured
    # A run that failed keeps what it recorded: breakdown and hot lines of the steps
    # it did record are shown, but no verdict is drawn from a cut-short window.
    shares = category_shares(profile) if measured else {}
    per_step = step_shares(profile) if measured else []
    spots = line_codes(hotspots(profile), findings, profile.cwd) if measured else []
    memory = memory_trend(profile)
    syncs = sorted(profile.sync_points, key=lambda s: (-s.stall_us, s.path, s.line))
    links = static_links(profile, findings, shares)
    context = AdviceContext(profile, shares, spots, memory, syncs)

    def verdict(kind: str, share: float) -> Verdict:
        """Advice for ``kind``; the static findings of its category follow the headline evidence."""
        evidence, recommendations = advise(kind, context)
        if kind != "none":
            evidence = evidence[:1] + link_evidence(links, kind, profile.device) + evidence[1:]
        return Verdict(kind, share, evidence, recommendations)

    kind, share = choose_kind(shares, memory) if ok else ("none", 0.0)
    secondary_kinds, withheld = _secondary_kinds(shares, kind, per_step, profile) if ok else ([], [])
    secondary = [verdict(k, s) for k, s in secondary_kinds]
    bottleneck = verdict(kind, share)
    bottleneck.evidence += _primary_note(kind, per_step, profile) if ok else []
    if kind == "memory_growth" and ok:
        # the time bottleneck still matters: keep it as the first secondary verdict
        time_kind, time_share = choose_kind(shares, MemoryTrend(0, 0.0, 0.0, False))
        if time_kind != "none" and all(v.kind != time_kind for v in secondary):
            secondary.insert(0, verdict(time_kind, time_share))
    bottleneck, *secondary = with_gap_evidence(profile, spots, [bottleneck, *secondary]) if ok else [bottleneck, *secondary]
    found, unplaced = _placed(
        runtime_findings(profile, findings, shares, spots, syncs, memory) + compile_findings(profile) + dtype_findings(profile)
        + device_findings(profile, findings, links, spots)
        + pattern_findings(profile, findings, shares, spots))
    _add_unplaced(bottleneck, unplaced)
    ranges = range_evidence(profile) if ok and not any(h.path for h in spots) else ""
    if ranges:  # no line names the time: the innermost ranges do, after the headline
        bottleneck.evidence.insert(1, Evidence(ranges))
    return Diagnosis(
        step_us=profile.mean_step_us,
        steps=profile.steps_profiled,
        breakdown=shares,
        bottleneck=bottleneck,
        secondary=secondary,
        hotspots=spots,
        memory=memory,
        sync_points=syncs,
        static_links=links,
        runtime_findings=found,
        breakdown_spread=spread(per_step),
        withheld=withheld,
    )
