"""The seven Overview recommendations of TensorBoard's profiler plugin, with their thresholds, as findings.

The plugin (torch-tb-profiler, deprecated in 2023 and deleted upstream in 2026)
printed them under its Overview page as advice with no line.  Here each is a
runtime finding on a line, with its measured cost per step:

======  =================================================  ==========================================
code    raised when (the plugin's threshold)               placed on
======  =================================================  ==========================================
TTR303  the DataLoader runs in the training process        the ``for`` line that asks it for batches
        (num_workers=0; also torch's matcher's             (unless TTR302, loader-bound, is there)
        Synchronized DataLoader); warning above 5 % of
        the step
TTR304  a DataLoader with workers still takes > 5 % of     the same line
        the step (the main thread waits for batches)
TTR401  DataParallel on more than one GPU                  the DataParallel call
TTR402  DistributedDataParallel without NCCL on a GPU of   the DDP call
        compute capability >= 3.5
TTR403  communication > 10 % of the step                   the line with most communication time
TTR605  GPU utilization (busy share of the steps) < 50 %   the hottest line of the step
TTR606  no Tensor-Core kernel time while matmuls /         the matmul line with most GPU time
        convolutions run, compute capability >= 7.0
        (left to TTR602 when those are fp32 matmuls with
        TF32 off on 8.0+: the same fix)
TTR703  peak allocated memory > 90 % of the GPU's          the line holding most memory at the peak
======  =================================================  ==========================================

Where the data comes from: the DataLoader's ``enumerate(DataLoader)#...``
ranges (a trace) or the loader's ``num_workers`` (a profiled run); the
DataParallel / DDP calls and the collective backend (``distributedInfo``, op
names) of a trace; the category shares, GPU busy time, matmul shapes, kernel
names and device facts of both.  Tensor-Core kernels are told by name
(``device.kernels``: unlike the plugin, an ``xmma`` kernel named for FFMA is not
one).

A run with no line to place TTR403 / TTR605 on (a trace without Python frames
or call stacks) still gets them, with an empty path and line 0
(``NO_LINE``): report.json's findings need a line, so ``diagnose`` moves
them into the verdict's evidence and recommendations (``unplaced``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from ....findings import Finding
from ..crosslink import LOADER_BOUND_SHARE, covers, finding_category, normalize_path
from ..device.gpu_compute import gpu_busy_share
from ..device.kernels import is_tensor_core_kernel
from ...results.profile_data import ProfileData
from ...results.trace_patterns import PatternHit, TraceFacts
from ...results.verdicts import Evidence, Hotspot, Recommendation
from .common import Window, cost_text, pattern_finding, said_by

LOADER_SHARE = 0.05  # the plugin: DataLoader time over 5 % of the step -> workers
COMM_SHARE = 0.10  # communication over 10 % of the step
GPU_UTILIZATION = 0.50  # GPU utilization under 50 % -> a larger batch
MEMORY_SHARE = 0.90  # peak memory over 90 % of the device
TENSOR_CORES = (7, 0)  # compute capability with Tensor Cores
NCCL_CAPABILITY = (3, 5)  # the plugin's bar for "a GPU NCCL supports"
TF32 = (8, 0)
MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
IN_PROCESS = "_SingleProcessDataLoaderIter"
NO_LINE = ("", 0)  # where a finding with no line goes (moved into the verdict by ``diagnose``)
NO_LINE_NOTE = "no source line: the trace has no Python frames or call stacks"
GIB = 2**30


def _where(path: str, line: int) -> str:
    return f"{Path(path).name}:{line}"


# -- data loading ---------------------------------------------------------------------------------------
def _loader_lines(profile: ProfileData, facts: Optional[TraceFacts]) -> list[tuple[str, int, float, Optional[bool]]]:
    """(path, line, loader us, in the training process?) per loop over a DataLoader."""
    if facts is not None:
        return [(h.path, h.line, h.us, h.details.get("iterator") == IN_PROCESS if h.details.get("iterator") else None)
                for h in facts.of_kind("loader") if h.placed]
    loading = [c for c in profile.lines if c.category == "data_loading" and c.device == "cpu"]
    if not loading or profile.loader_workers is None:
        return []
    top = max(loading, key=lambda c: (c.inclusive_us, c.self_us, c.path, -c.line))
    return [(top.path, top.line, profile.category_us.get("data_loading", 0.0), profile.loader_workers == 0)]


def _loader_bound_at(profile: ProfileData, static: Sequence[Finding], shares: dict[str, float],
                     spots: Sequence[Hotspot]) -> Optional[str]:
    """The line TTR302 (``crosslink``: loader-bound, no static TT302) goes on, normalised; None when it is not raised."""
    loading = [h for h in spots if h.category == "data_loading"]
    if shares.get("data_loading", 0.0) < LOADER_BOUND_SHARE or not loading or any(f.code.upper() == "TT302" for f in static):
        return None
    top = loading[0]
    if any(finding_category(f) == "data_loading" and covers(f, top.path, top.line, profile.cwd) for f in static):
        return None
    return f"{normalize_path(top.path, profile.cwd)}:{top.line}"


def _loader_findings(profile: ProfileData, facts: Optional[TraceFacts], static: Sequence[Finding], shares: dict[str, float],
                     spots: Sequence[Hotspot], window: Window) -> list[Finding]:
    out = []
    bound_at = _loader_bound_at(profile, static, shares, spots)
    for path, line, us, in_process in _loader_lines(profile, facts):
        share = window.share(us)
        if us <= 0 or (not in_process and share <= LOADER_SHARE):
            continue
        if f"{normalize_path(path, profile.cwd)}:{line}" == bound_at and (not in_process or profile.loader_workers == 0):
            continue  # TTR302 is on this line already, with the loader's share (and num_workers=0 when in process)
        if in_process and said_by(static, ("TT302",), path, line, profile.cwd):
            continue
        evidence = [Evidence(f"{_where(path, line)}: the loop waited {cost_text(window, us)} for its batches"
                             + (" while the DataLoader loaded them in the training process (num_workers=0)" if in_process else
                                f" from {profile.loader_workers or 'its'} worker processes"), path, line)]
        if in_process:
            evidence.append(Evidence("First-time profiles often show 20-30 % of runs loader-bound, the GPU idle 30-50 % of each "
                                     "step with num_workers 0 or 1 (field reports)"))
            message = (f"the DataLoader loads every batch in the training process (num_workers=0): {cost_text(window, us)} "
                       "of waiting" + (f" (over the {LOADER_SHARE * 100:.0f}% bar)" if share > LOADER_SHARE else "")
                       + ": give it worker processes")
            recs = [Recommendation(
                "Set num_workers (start near half the physical cores and sweep up), with persistent_workers=True",
                "Workers load and collate the next batches in other processes while the step runs, so the loop only waits when "
                "they fall behind; persistent workers skip the start-up at each epoch.",
                "DataLoader(dataset, batch_size=bs, num_workers=4, persistent_workers=True, pin_memory=True)",
            )]
            code = "TTR303"
        else:
            message = (f"the loop still waits {cost_text(window, us)} for batches from the DataLoader's workers "
                       f"(over the {LOADER_SHARE * 100:.0f}% bar): more workers, a larger prefetch_factor, or cheaper samples")
            recs = [Recommendation(
                "Raise num_workers and prefetch_factor (about 4), keep workers persistent; then cut the per-sample cost",
                "The workers do not keep up with the step: more of them, or batches queued further ahead, hide the loading "
                "until the per-sample work itself (decoding, transforms) is the limit; move such transforms to the GPU or cache "
                "preprocessed tensors.",
                "DataLoader(dataset, batch_size=bs, num_workers=8, prefetch_factor=4, persistent_workers=True)",
            )]
            code = "TTR304"
        out.append(pattern_finding(code, path, line, message, window, us, evidence=evidence, recommendations=recs,
                                   details={"in_process": bool(in_process), "workers": profile.loader_workers,
                                            "bar": LOADER_SHARE}))
    return out


# -- distributed ----------------------------------------------------------------------------------------
def _first(hits: list[PatternHit]) -> Optional[PatternHit]:
    placed = [h for h in hits if h.placed]
    return max(placed, key=lambda h: h.us) if placed else None


def _distributed_findings(profile: ProfileData, facts: Optional[TraceFacts], shares: dict[str, float],
                          window: Window) -> list[Finding]:
    out: list[Finding] = []
    comm_us = shares.get("communication", 0.0) * window.total_us
    if facts is not None:
        dp = _first(facts.of_kind("data_parallel"))
        if dp is not None and facts.gpu_devices > 1:
            out.append(pattern_finding(
                "TTR401", dp.path, dp.line,
                f"DataParallel drives {facts.gpu_devices} GPUs from one process: its scatter, replicate and gather take "
                f"{cost_text(window, dp.us)}; DistributedDataParallel runs one process per GPU",
                window, dp.us, loud=True,
                evidence=[Evidence(f"{_where(dp.path, dp.line)}: DataParallel's forward in {dp.steps} recorded steps; GPU activity "
                                   f"on {facts.gpu_devices} devices", dp.path, dp.line)],
                recommendations=[Recommendation(
                    "Use DistributedDataParallel (torchrun --nproc-per-node N) instead of DataParallel",
                    "DataParallel copies the model to every GPU each step and runs them from one Python thread under the GIL; "
                    "DDP keeps a replica per process and overlaps the gradient all-reduce with backward.",
                    "model = DistributedDataParallel(model.to(rank), device_ids=[rank])")],
                details={"gpu_devices": facts.gpu_devices}))
        ddp = _first(facts.of_kind("ddp"))
        backends = {b.lower() for b in [facts.backend, *facts.backends_seen] if b}
        cap = facts.capability or (profile.device_facts.capability if profile.device_facts else None)
        if ddp is not None and profile.device == "cuda" and cap is not None and cap >= NCCL_CAPABILITY and "nccl" not in backends:
            backend = facts.backend or ", ".join(sorted(backends)) or "not NCCL"
            out.append(pattern_finding(
                "TTR402", ddp.path, ddp.line,
                f"DistributedDataParallel on GPUs (compute capability {cap[0]}.{cap[1]}) communicates through {backend}, not "
                f"NCCL: communication takes {cost_text(window, comm_us)}; init_process_group('nccl') is the fast GPU backend",
                window, comm_us, loud=True,
                evidence=[Evidence(f"the trace's process-group backend: {backend}; DDP's forward at {_where(ddp.path, ddp.line)}",
                                   ddp.path, ddp.line)],
                recommendations=[Recommendation(
                    "Initialise the process group with the NCCL backend for CUDA tensors",
                    "NCCL moves GPU buffers over NVLink / InfiniBand directly; gloo stages them through host memory.",
                    "torch.distributed.init_process_group(backend='nccl')")],
                details={"backend": backend}))
    if shares.get("communication", 0.0) > COMM_SHARE:
        lines = [c for c in profile.lines if c.category == "communication"]
        top = max(lines, key=lambda c: (c.self_us, c.path, -c.line)) if lines else None
        anchor = (top.path, top.line) if top is not None else None
        if anchor is None and facts is not None:
            ddp = _first(facts.of_kind("ddp"))
            anchor = (ddp.path, ddp.line) if ddp is not None else None
        placed = anchor is not None
        anchor = anchor if anchor is not None else NO_LINE
        out.append(pattern_finding(
            "TTR403", anchor[0], anchor[1],
            f"communication takes {cost_text(window, comm_us)} (over the {COMM_SHARE * 100:.0f}% bar): accumulate gradients "
            "over several micro-batches, raise the batch size, or compress the gradients",
            window, comm_us,
            evidence=[Evidence(f"{_where(*anchor)} has the most communication time"
                               + (f" ({(top.top_names or ['collectives'])[0]})" if top is not None else ""), anchor[0], anchor[1])
                      if placed else Evidence(f"communication covers {shares.get('communication', 0.0) * 100:.1f}% of the step; "
                                              + NO_LINE_NOTE)],
            recommendations=[
                Recommendation(
                    "Accumulate gradients: skip the all-reduce on all but the last micro-batch (model.no_sync())",
                    "Fewer all-reduces per sample; the global batch grows, so check convergence (a LAMB-style optimizer helps "
                    "with large batches).",
                    "with model.no_sync():\n    loss_a.backward()\nloss_b.backward()  # all-reduce once"),
                Recommendation(
                    "Or compress the gradients with a DDP communication hook",
                    "bf16/fp16 compression halves the bytes on the wire; PowerSGD cuts them further.",
                    "from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n"
                    "model.register_comm_hook(None, default_hooks.bf16_compress_hook)"),
            ],
            details={"share": round(shares.get("communication", 0.0), 5), "bar": COMM_SHARE}))
    return out


# -- the GPU --------------------------------------------------------------------------------------------
def _anchor(spots: Sequence[Hotspot]) -> Optional[Hotspot]:
    return spots[0] if spots else None


def _gpu_findings(profile: ProfileData, spots: Sequence[Hotspot], window: Window) -> list[Finding]:
    if profile.device != "cuda" or not profile.steps:
        return []
    out = []
    busy = gpu_busy_share(profile)
    top = _anchor(spots)
    if busy and busy < GPU_UTILIZATION:  # no GPU activity recorded at all: not measured, not idle
        idle_us = (1.0 - busy) * window.total_us
        path, line = (top.path, top.line) if top is not None else NO_LINE
        out.append(pattern_finding(
            "TTR605", path, line,
            f"the GPU is busy only {busy * 100:.0f}% of the step (under the {GPU_UTILIZATION * 100:.0f}% bar): it idles "
            f"{cost_text(window, idle_us)}; give it more work per launch (a larger batch), once the idle gaps' causes are gone",
            window, idle_us,
            evidence=[Evidence(f"GPU activity (kernels, copies, memsets) covers {busy * 100:.0f}% of the recorded steps' time"),
                      Evidence(f"the step's hottest line: {_where(top.path, top.line)} ({top.category})", top.path, top.line)
                      if top is not None else Evidence(NO_LINE_NOTE)],
            recommendations=[Recommendation(
                "Raise the batch size (and the learning rate with it), then measure samples per second",
                "A larger batch gives each kernel more work for the same launch and Python cost; throughput = batch size x steps/s, "
                "and plotting it against the batch size shows where the GPU saturates. A busy share is not proof of health "
                "either: tiny kernels also read as busy.",
                "loader = DataLoader(dataset, batch_size=2 * batch_size, ...)")],
            details={"gpu_busy_share": round(busy, 5), "bar": GPU_UTILIZATION}))
    out += _tensor_core_findings(profile, window)
    out += _memory_findings(profile, spots)
    return out


def _tf32_finding_applies(profile: ProfileData) -> bool:
    """Whether TTR602 (fp32 matmuls with TF32 off, 8.0+) says the same for this run."""
    facts = profile.device_facts
    if facts is None or facts.capability is None or facts.capability < TF32:
        return False
    if facts.allow_tf32 or facts.float32_matmul_precision != "highest":
        return False
    return any(s.dtype == "float32" and s.gpu_us > 0 and s.path for s in profile.shapes)


def _tensor_core_findings(profile: ProfileData, window: Window) -> list[Finding]:
    facts = profile.device_facts
    cap = facts.capability if facts is not None else None
    eligible = [s for s in profile.shapes if s.gpu_us > 0]
    if cap is None or cap < TENSOR_CORES or not eligible:
        return []
    tc_us = sum(op.self_us for op in profile.ops if op.device == "cuda" and is_tensor_core_kernel(op.name))
    if tc_us > 0 or _tf32_finding_applies(profile):
        return []
    eligible_us = sum(s.gpu_us for s in eligible)
    gpu_us = sum(op.self_us for op in profile.ops if op.device == "cuda") or eligible_us
    by_line: dict[tuple[str, int], float] = {}
    for s in eligible:
        if s.path:
            by_line[(s.path, s.line)] = by_line.get((s.path, s.line), 0.0) + s.gpu_us
    if not by_line:
        return []
    (path, line), _ = max(by_line.items(), key=lambda kv: (kv[1], kv[0]))
    dtypes = sorted({s.dtype for s in eligible if s.dtype})
    return [pattern_finding(
        "TTR606", path, line,
        f"no kernel ran on the Tensor Cores, though matmuls and convolutions take {eligible_us / max(gpu_us, 1e-9) * 100:.0f}% of "
        f"the GPU time ({cost_text(window, eligible_us)}) on a GPU of compute capability {cap[0]}.{cap[1]}: run them in "
        "mixed precision (autocast)",
        window, eligible_us,
        evidence=[Evidence(f"{s.op} {' @ '.join('x'.join(map(str, d)) for d in s.dims) or '(shapes not recorded)'} "
                           f"({s.dtype or 'dtype not recorded'}): {window.per_step_ms(s.gpu_us):.2f} ms GPU time per step",
                           s.path, s.line) for s in sorted(eligible, key=lambda s: -s.gpu_us)[:3]],
        recommendations=[Recommendation(
            "Train in mixed precision: torch.autocast (bf16 on Ampere and newer, fp16 with a GradScaler before)",
            "Tensor Cores multiply 16-bit inputs several times faster than the CUDA cores do fp32; bf16 autocast gives up to "
            "~2x on transformers (field reports) and needs no loss scaling.",
            "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)")],
        details={"eligible_gpu_share": round(eligible_us / max(gpu_us, 1e-9), 5), "dtypes": dtypes,
                 "capability": f"{cap[0]}.{cap[1]}"})]


def _memory_findings(profile: ProfileData, spots: Sequence[Hotspot]) -> list[Finding]:
    facts = profile.device_facts
    if facts is None or not facts.total_bytes:
        return []
    peak = max([facts.allocated_peak_bytes] + [m.peak_bytes for m in profile.memory_steps])
    if peak <= MEMORY_SHARE * facts.total_bytes:
        return []
    shape = profile.memory_shape
    if shape is not None and shape.activation_lines:
        where = shape.activation_lines[0]
        anchor: Optional[tuple[str, int]] = (where.path, where.line)
    elif profile.memory_lines:
        biggest = max(profile.memory_lines, key=lambda m: (m.allocated_bytes, m.path, m.line))
        anchor = (biggest.path, biggest.line)
    else:
        anchor = (spots[0].path, spots[0].line) if spots else None
    if anchor is None:
        return []
    window = Window.of(profile)
    return [pattern_finding(
        "TTR703", anchor[0], anchor[1],
        f"memory peaks at {peak / GIB:.1f} GiB, {peak / facts.total_bytes * 100:.0f}% of the GPU's {facts.total_bytes / GIB:.1f} "
        f"GiB (over the {MEMORY_SHARE * 100:.0f}% bar): checkpoint activations or train in mixed precision before the batch grows",
        window, 0.0, loud=True,
        evidence=[Evidence(f"allocated peak {peak / GIB:.2f} GiB of {facts.total_bytes / GIB:.2f} GiB"
                           + (f"; the line holding the most at the peak: {_where(*anchor)}" if anchor else ""), anchor[0], anchor[1])],
        recommendations=[
            Recommendation("Checkpoint the activations of the largest blocks (torch.utils.checkpoint)",
                           "Recomputing a block's activations in backward trades about a third more compute for most of their memory.",
                           "x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)"),
            Recommendation("Train in bf16 autocast",
                           "16-bit activations take half the memory of fp32 ones.",
                           "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)"),
        ],
        details={"peak_bytes": int(peak), "total_bytes": int(facts.total_bytes), "bar": MEMORY_SHARE})]


def overview_findings(profile: ProfileData, facts: Optional[TraceFacts], static: Sequence[Finding], shares: dict[str, float],
                      spots: Sequence[Hotspot]) -> list[Finding]:
    """TTR303, TTR304, TTR401-TTR403, TTR605, TTR606, TTR703 for one run (see the module doc)."""
    if not profile.steps:
        return []
    window = Window.of(profile)
    return (_loader_findings(profile, facts, static, shares, spots, window) + _distributed_findings(profile, facts, shares, window)
            + _gpu_findings(profile, spots, window))
