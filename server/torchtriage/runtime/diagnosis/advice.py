"""Evidence and recommendations for one bottleneck kind, tailored to the run.

Pure text from numbers: ``advise(kind, share, context)`` returns the evidence
(numbers and source lines that support the verdict) and the fixes to try, in
the order guides recommend them.  The figures quoted come from the field notes
(launch latency, compile and bf16 speed-ups, sync costs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .device.gpu_compute import host_bound, kernel_advice
from .machine import WorkerPlan, host_physical_cores
from ..results.profile_data import ProfileData, SyncPoint
from .stability import loader_pattern
from ..results.verdicts import Evidence, Hotspot, MemoryTrend, Recommendation


@dataclass
class AdviceContext:
    """What advice needs to tailor its text; built once per diagnosis."""

    profile: ProfileData
    shares: dict[str, float]
    hotspots: list[Hotspot]
    memory: MemoryTrend
    sync_points: list[SyncPoint] = field(default_factory=list)

    @property
    def step_ms(self) -> float:
        return self.profile.mean_step_us / 1000.0

    @property
    def cuda(self) -> bool:
        return self.profile.device == "cuda"

    def lines_of(self, category: str, limit: int = 3) -> list[Hotspot]:
        return [h for h in self.hotspots if h.category == category][:limit]

    def physical_cores(self) -> Optional[int]:
        """The run's physical cores: the run's own count, else this machine's; None for a trace recorded
        elsewhere that does not say (the analysing machine's cores say nothing about the one that ran it)."""
        extra: dict[str, Any] = self.profile.extra
        cores = extra.get("physical_cores") or extra.get("cpu_count")
        if not cores and (extra.get("source") or {}).get("kind") == "trace":
            return None
        return max(1, int(cores or host_physical_cores()))


def where(path: str, line: int) -> str:
    """``file.py:12`` for display (base name; the full path stays in the data)."""
    return f"{Path(path).name}:{line}" if path else "?"


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def _line_evidence(ctx: AdviceContext, category: str, label: str) -> list[Evidence]:
    out = []
    for spot in ctx.lines_of(category):
        names = f" ({', '.join(spot.top_names[:2])})" if spot.top_names else ""
        out.append(
            Evidence(
                f"{label} {where(spot.path, spot.line)}{names}: {spot.self_us_per_step / 1000:.2f} ms per step, "
                f"{_pct(spot.share)} of the step",
                spot.path,
                spot.line,
            )
        )
    return out


def _share_evidence(ctx: AdviceContext, category: str, what: str) -> Evidence:
    share = ctx.shares.get(category, 0.0)
    return Evidence(f"{what}: {share * ctx.step_ms:.2f} ms of a {ctx.step_ms:.2f} ms step ({_pct(share)})")


def _data_loading(ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    workers = ctx.profile.loader_workers
    cores = ctx.physical_cores()
    ev = [_share_evidence(ctx, "data_loading", "Waiting for the next batch")]
    if workers is not None:
        ev.append(Evidence(f"DataLoader num_workers={workers}: " + ("batches are built in the training process" if workers == 0 else "the workers cannot keep up")))
    pattern = loader_pattern(ctx.profile)
    if pattern is not None:
        ev.append(Evidence(pattern.text()))
    ev += _line_evidence(ctx, "data_loading", "Loading work at")
    hot = ctx.lines_of("data_loading", 1)
    at = f" at {where(hot[0].path, hot[0].line)}" if hot else ""
    cheaper = Recommendation(
        f"Make the per-sample work cheaper{at}: vectorise it, cache or pre-decode the samples",
        "Cache preprocessed tensors, batch the transform over the whole batch"
        + (" or run it on the GPU after the copy" if ctx.cuda else "")
        + ", and avoid per-sample Python loops and file opens in __getitem__.",
    )
    if cores is None:
        return ev, _workers_elsewhere(ctx, workers, cheaper)
    plan = WorkerPlan(cores, workers)
    recs = []
    if not workers:
        recs.append(
            Recommendation(
                f"Set num_workers={plan.start} (about half of the {plan.cores} physical cores)"
                + (f" and sweep up to {plan.cap}" if plan.cap > plan.start else ", leaving one core to the training process"),
                "Workers build batches in parallel with the step instead of before it; loader-bound runs "
                "commonly leave the accelerator idle 30-50% of every step with 0 or 1 workers.",
                f"DataLoader(ds, batch_size=..., num_workers={plan.start}, persistent_workers=True, prefetch_factor=4)",
            )
        )
    elif plan.at_cap:
        recs.append(
            Recommendation(
                cheaper.action,
                f"num_workers={workers} already uses what {plan.cores} physical cores allow (one core stays with the training "
                "process): more workers would only compete for the same cores. " + cheaper.why,
            )
        )
    else:
        recs.append(
            Recommendation(
                f"Raise num_workers from {workers} to {plan.target} (at most {plan.cap} on {plan.cores} physical cores) and prefetch_factor to 4",
                "The loader is still on the critical path with the current workers.",
                f"DataLoader(ds, num_workers={plan.target}, persistent_workers=True, prefetch_factor=4)",
            )
        )
    if ctx.cuda:
        recs.append(
            Recommendation(
                "Use pin_memory=True with non_blocking=True copies",
                "Pinned batches copy asynchronously, so the transfer overlaps with kernels already queued.",
                "x = x.to(device, non_blocking=True)  # DataLoader(..., pin_memory=True)",
            )
        )
    else:
        recs.append(
            Recommendation(
                f"Leave cores for the math: torch.set_num_threads({plan.threads})",
                f"On CPU the loader workers and the intra-op threads share the same {plan.cores} physical cores: with "
                f"{plan.target} worker{'s' if plan.target != 1 else ''}, {plan.threads} thread{'s' if plan.threads != 1 else ''} for the math.",
                f"torch.set_num_threads({plan.threads})",
            )
        )
    if not plan.at_cap:
        recs.append(cheaper)
    return ev, recs


def _workers_elsewhere(ctx: AdviceContext, workers: Optional[int], cheaper: Recommendation) -> list[Recommendation]:
    """The worker advice for a trace recorded on a machine whose cores are unknown: the rule, no number."""
    machine = "the physical cores of the machine that ran it"
    if not workers:
        recs = [Recommendation(
            f"Set num_workers to about half {machine}, leaving one core to the training process",
            "Workers build batches in parallel with the step instead of before it; loader-bound runs "
            "commonly leave the accelerator idle 30-50% of every step with 0 or 1 workers. The trace does not say "
            "how many cores that machine has.",
            "DataLoader(ds, batch_size=..., num_workers=max(1, len(os.sched_getaffinity(0)) // 2),\n"
            "           persistent_workers=True, prefetch_factor=4)",
        )]
    else:
        recs = [Recommendation(
            f"Raise num_workers from {workers} to {workers * 2} (at most one less than {machine}) and prefetch_factor to 4",
            "The loader is still on the critical path with the current workers; the trace does not say how many cores "
            "that machine has, and workers beyond them only compete for the same cores.",
            f"DataLoader(ds, num_workers={workers * 2}, persistent_workers=True, prefetch_factor=4)",
        )]
    if ctx.cuda:
        recs.append(Recommendation(
            "Use pin_memory=True with non_blocking=True copies",
            "Pinned batches copy asynchronously, so the transfer overlaps with kernels already queued.",
            "x = x.to(device, non_blocking=True)  # DataLoader(..., pin_memory=True)",
        ))
    else:
        recs.append(Recommendation(
            "Leave cores for the math: torch.set_num_threads(<physical cores minus the workers>)",
            f"On CPU the loader workers and the intra-op threads share {machine}.",
        ))
    return recs + [cheaper]


def _host_sync(ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    ev = [_share_evidence(ctx, "host_sync", "Blocked on device-to-host syncs")]
    n = max(1, ctx.profile.steps_profiled)
    for sp in ctx.sync_points[:3]:
        ev.append(
            Evidence(
                f"{sp.kind} at {where(sp.path, sp.line)}: {sp.count / n:.1f} per step, "
                f"{sp.stall_us / n / 1000:.2f} ms blocked per step",
                sp.path,
                sp.line,
            )
        )
    kinds = {sp.kind for sp in ctx.sync_points}
    recs = [
        Recommendation(
            "Keep running metrics on the device and read them every N steps",
            "Each .item()/.cpu()/print(tensor) waits for all queued work (about 1-5 ms per step on a GPU) "
            "and stops the CPU from running ahead.",
            "running += loss.detach()\nif step % 100 == 0:\n    print((running / 100).item()); running.zero_()",
        )
    ]
    if kinds & {"nonzero", "tolist"}:
        recs.append(
            Recommendation(
                "Avoid data-dependent shapes in the step (nonzero, boolean masks, .tolist())",
                "Their output size is only known after the device finishes; use torch.where or masked arithmetic.",
            )
        )
    if kinds & {"device_sync", "stream_sync", "event_sync"}:
        recs.append(
            Recommendation(
                "Remove torch.cuda.synchronize() from the step",
                "Explicit syncs only belong around timing code; the profiler measures without them.",
            )
        )
    return ev, recs


def _launch_overhead(ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    p = ctx.profile
    ev = [_share_evidence(ctx, "launch_overhead", "Fixed per-op dispatch/launch cost")]
    compute_ms = (ctx.shares.get("compute", 0.0) + ctx.shares.get("launch_overhead", 0.0)) * ctx.step_ms
    if p.device == "cuda" and p.kernels_per_step:
        ev.append(Evidence(f"{p.kernels_per_step:.0f} kernels per step, {compute_ms * 1000 / p.kernels_per_step:.1f} us each on average"))
    elif p.ops_per_step:
        ev.append(Evidence(f"{p.ops_per_step:.0f} ops per step, {compute_ms * 1000 / p.ops_per_step:.1f} us each on average"))
    ev += _line_evidence(ctx, "compute", "Many short ops from")[:2]
    recs = [
        Recommendation(
            "Compile the model: model = torch.compile(model)"
            + (' (mode="reduce-overhead" for CUDA graphs)' if ctx.cuda else ""),
            "Fusion turns hundreds of tiny ops into a few kernels (from several hundred per batch to under fifty "
            "in common reports); 1.2-1.5x on training loops, more for small models. The first steps compile slowly.",
            "model = torch.compile(model" + (', mode="reduce-overhead")' if ctx.cuda else ")"),
        ),
        Recommendation(
            "Use a larger batch",
            "The per-op cost is fixed, so more samples per op spread it thinner.",
        ),
        Recommendation(
            "Use a fused or foreach optimizer",
            "One kernel for the whole update instead of one per parameter tensor.",
            "torch.optim.AdamW(model.parameters(), lr=1e-3, " + ("fused=True)" if ctx.cuda else "foreach=True)"),
        ),
    ]
    return ev, recs


def _python_overhead(ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    ev = [_share_evidence(ctx, "python_overhead", "Python work between ops")]
    ev += _line_evidence(ctx, "python_overhead", "Python time at")
    hot = ctx.lines_of("python_overhead", 1)
    at = f" at {where(hot[0].path, hot[0].line)}" if hot else ""
    frames = f" (frames: {', '.join(hot[0].top_names[:3])})" if hot and hot[0].top_names else ""
    recs = [
        Recommendation(
            f"Cut the Python work{at}{frames}",
            "A per-sample or per-element loop becomes one batched tensor op; framework frames "
            "(module calls, autograd) shrink with torch.compile.",
        ),
        Recommendation(
            "Move per-sample preprocessing into the Dataset and use DataLoader workers",
            "Work done in workers overlaps with the step instead of adding to it.",
        ),
        Recommendation(
            "Try torch.compile on the function doing the work",
            "Tensor code in Python loops can be traced and fused; plain Python objects cannot.",
        ),
    ]
    return ev, recs


def _compute(ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    ev = [_share_evidence(ctx, "compute", "Ops doing the math (forward + backward)")]
    if ctx.shares.get("optimizer", 0.0) >= 0.02:
        ev.append(_share_evidence(ctx, "optimizer", "Optimizer step"))
    ev += _line_evidence(ctx, "compute", "Compute at")
    if ctx.cuda:
        host_evidence, host_advice = host_bound(ctx.profile)  # the GPU mostly idle: the ops' time is the host's
        ev += host_evidence
        recs = host_advice + kernel_advice(ctx.profile)
    else:
        threads = ctx.profile.extra.get("num_threads")
        cores = ctx.physical_cores()
        recs = [
            Recommendation(
                (f"Give the math all physical cores: torch.set_num_threads({cores})" if cores is not None else
                 "Give the math all physical cores of the machine that ran it: torch.set_num_threads(<its physical cores>)")
                + (f" (the run used {threads})" if threads else ""),
                "CPU ops parallelise over intra-op threads; hyper-threads rarely help BLAS.",
            ),
            Recommendation(
                "Use channels_last for convolutional models",
                "oneDNN convolutions run faster on NHWC tensors.",
                "model = model.to(memory_format=torch.channels_last); x = x.to(memory_format=torch.channels_last)",
            ),
            Recommendation(
                "Try bf16 autocast on CPU if the processor has AVX-512 BF16 / AMX",
                "Halves memory traffic; measure, older CPUs may get slower.",
                "with torch.autocast('cpu', dtype=torch.bfloat16):\n    loss = model(x)",
            ),
            Recommendation("Try a larger batch and torch.compile", "Bigger matmuls use the cores better; compile fuses elementwise work."),
        ]
    return ev, recs


def _communication(ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    ev = [_share_evidence(ctx, "communication", "Collectives")]
    recs = [
        Recommendation("Overlap gradients with backward: tune DDP bucket_cap_mb", "Larger buckets mean fewer, better-overlapped all-reduces."),
        Recommendation("Accumulate gradients with model.no_sync() between optimizer steps", "Syncs once per N micro-batches."),
        Recommendation("Look for a straggler rank", "One slow rank (load imbalance, slower data) makes every rank wait."),
    ]
    return ev, recs


def _optimizer(ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    ev = [_share_evidence(ctx, "optimizer", "Optimizer step and zero_grad")]
    recs = [
        Recommendation(
            "Use a fused or foreach optimizer",
            "One kernel for the whole update instead of one per parameter tensor.",
            "torch.optim.AdamW(params, " + ("fused=True)" if ctx.cuda else "foreach=True)"),
        )
    ]
    return ev, recs


def _memory_growth(ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    m = ctx.memory
    n = len(m.steps)
    ev = [
        Evidence(
            f"Allocated memory at the end of each step grows by {m.growth_bytes_per_step / 2**20:.2f} MiB per step "
            f"over {n} steps (linear fit R^2 = {m.fit_r2:.2f}); +{m.growth_bytes_per_step * 10000 / 2**30:.1f} GiB per 10k steps"
        )
    ]
    for ml in m.top_lines[:3]:
        if ml.retained_bytes > 0:
            ev.append(Evidence(f"{where(ml.path, ml.line)} allocates memory that is still held: {ml.retained_bytes / 2**20:.2f} MiB retained", ml.path, ml.line))
    if m.snapshot:
        ev.append(Evidence(f"Memory snapshot: {m.snapshot} (open it at pytorch.org/memory_viz)"))
    top = next((ml for ml in m.top_lines if ml.retained_bytes > 0), None)
    at = f" produced at {where(top.path, top.line)}" if top else ""
    recs = [
        Recommendation(
            f"Stop keeping tensors{at} alive across steps: store loss.detach() or a Python float",
            "Appending a loss (or `total += loss`) keeps its whole autograd graph and activations alive every step.",
            "losses.append(loss.detach())   # or: total += loss.item() every N steps",
        ),
        Recommendation("Remove hooks and debug dicts that collect tensors each step", "Anything that references a step's tensors keeps them allocated."),
    ]
    return ev, recs


def _none(ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    st = ctx.profile.status
    if ctx.profile.steps_profiled == 0 or st.status not in ("completed", "stopped_after_window"):
        msg = f"Run status {st.status}" + (f": {st.message}" if st.message else "") + f"; {ctx.profile.steps_profiled} steps profiled"
        return [Evidence(msg)], [Recommendation("Fix the run and profile again", "No verdict without profiled steps.")]
    top = max(ctx.shares, key=lambda c: ctx.shares[c]) if ctx.shares else "idle"
    return (
        [Evidence(f"No category passes its bar; the largest is {top} at {_pct(ctx.shares.get(top, 0.0))}")],
        [Recommendation("Measure throughput against batch size", "Where samples/s stops rising, compute saturates.")],
    )


ADVISORS: dict[str, Callable[[AdviceContext], tuple[list[Evidence], list[Recommendation]]]] = {
    "data_loading": _data_loading,
    "host_sync": _host_sync,
    "launch_overhead": _launch_overhead,
    "python_overhead": _python_overhead,
    "compute": _compute,
    "communication": _communication,
    "optimizer": _optimizer,
    "memory_growth": _memory_growth,
    "none": _none,
}


def advise(kind: str, ctx: AdviceContext) -> tuple[list[Evidence], list[Recommendation]]:
    """Evidence and recommendations for ``kind`` (a bottleneck kind or "optimizer")."""
    return ADVISORS.get(kind, _none)(ctx)
