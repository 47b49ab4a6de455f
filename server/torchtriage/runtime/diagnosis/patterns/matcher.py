"""torch's profiler pattern matcher, measured: each anti-pattern with its cost per step and its line.

torch's matcher (``torch/profiler/_pattern_matcher.py``, ``report_all_anti_patterns``)
walks a run's event tree and prints a source location per match, with no cost
unless it re-runs shapes on the GPU.  A trace's sweep finds the same shapes
(``offline/patterns.py`` says how); here each becomes a finding on the innermost
user line that made it, costing what the trace measured there:

======  ===================================  ===================================  ====================
code    matcher pattern                      cost                                 static twin (same
                                                                                  line: no finding)
======  ===================================  ===================================  ====================
TTR305  Extra CUDA Copy                      the filling call, the copy and the   TT305
                                             copy's GPU time
TTR306  For Loop Indexing (>= 10 repeats)    the span of the repeats              TT306
TTR504  Optimizer Single Tensor              the optimizer's step                 TT503
TTR507  Gradient Set To Zero                 the fills and their kernels          TT507
TTR509  Conv2d Bias Followed By BatchNorm    the convolution's call (a bound:     --
                                             the bias is a part of it)
======  ===================================  ===================================  ====================

The matcher's Synchronized DataLoader is TTR303 (``overview``: with the
DataLoader rule of TensorBoard's plugin), FP32 MatMul is TTR602 and MatMul Dim
In FP16 is TTR601 (``device.tensor_cores``).  A pattern the trace could not place
on a line (recorded without ``with_stack``) gives no finding: its facts stay in
profile.json's ``extra.trace_patterns``.  A profiled run has no such facts; its
agent charges Python functions by name, so an optimizer line whose time went to
``_single_tensor_<name>`` gives TTR504 there too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ....findings import Finding
from ...results.profile_data import ProfileData
from ...results.trace_patterns import PatternHit, TraceFacts
from ...results.verdicts import Evidence, Recommendation
from .common import Window, cost_text, pattern_finding, said_by

TWINS = {"created_then_moved": ("TT305",), "indexing_loop": ("TT306",), "single_tensor_optimizer": ("TT503",),
         "zero_grad_fills": ("TT507",), "conv_bias_before_bn": ()}


def _where(hit: PatternHit) -> str:
    return f"{Path(hit.path).name}:{hit.line}"


def _moved(hit: PatternHit, window: Window) -> Finding:
    sizes = hit.details.get("sizes") or ""
    us = hit.us + hit.gpu_us
    message = (f"a tensor{' of ' + sizes.replace('x', ' x ') if sizes else ''} is filled on the CPU and then copied to the GPU "
               f"{hit.count / window.steps:.1f}x per step, costing {cost_text(window, us)}: create it on the GPU")
    evidence = [Evidence(f"{_where(hit)}: a fill (zeros/ones/full/rand...) then aten::to with a host-to-device copy of the same "
                         f"sizes, {hit.count} times in {hit.steps} recorded steps; {hit.us / 1000:.2f} ms of CPU time and "
                         f"{hit.gpu_us / 1000:.3f} ms of copies on the GPU in all", hit.path, hit.line)]
    recs = [Recommendation(
        "Create the tensor on the device: torch.zeros(shape, device=device)",
        "Filling on the CPU and copying costs a host allocation, the fill, a (pageable, blocking) copy and a GPU allocation "
        "every step; a tensor made on the GPU is one kernel, or none when it can be made once outside the loop.",
        "noise = torch.zeros(images.shape, device=images.device)",
    )]
    return pattern_finding("TTR305", hit.path, hit.line, message, window, us, evidence=evidence, recommendations=recs,
                           details={"sizes": sizes, "per_step": round(hit.count / window.steps, 3), "gpu_ms": round(hit.gpu_us / 1000, 4)})


def _indexing(hit: PatternHit, window: Window) -> Finding:
    in_loader = hit.details.get("context") == "data_loading"
    ops = ", ".join(hit.details.get("ops") or ["aten::select"])
    where = " inside the DataLoader's fetch (a Dataset indexed one sample at a time)" if in_loader else ""
    message = (f"a Python loop indexes a tensor one element at a time{where}: {hit.count / window.steps:.0f} iterations of "
               f"[{ops}] per step cost {cost_text(window, hit.us)}: write it as one tensor operation")
    evidence = [Evidence(f"{_where(hit)}: {hit.count} repeats of the same ops after aten::select (torch's matcher needs 10) "
                         f"over {hit.steps} recorded steps; the loop's span is {hit.us / 1000:.2f} ms in all", hit.path, hit.line)]
    if in_loader:
        recs = [Recommendation(
            "Fetch the whole batch with one indexing op",
            "A map-style Dataset is asked for each sample and the samples are stacked: two tiny ops per sample per tensor. "
            "With a BatchSampler and batch_size=None the Dataset receives the batch's indices and can index once.",
            "DataLoader(dataset, sampler=BatchSampler(RandomSampler(dataset), batch, drop_last=True), batch_size=None)",
        )]
    else:
        recs = [Recommendation(
            "Vectorise the loop: one op over the whole range instead of one per element",
            "Each element costs a select op, a copy and the Python around them (several microseconds each); one op over a "
            "tensor of indices does the same work in one call.",
            "weights = torch.arange(n) * 0.1 + 1.0  # instead of: for i in range(n): weights[i] = i * 0.1 + 1.0",
        )]
    return pattern_finding("TTR306", hit.path, hit.line, message, window, hit.us, evidence=evidence, recommendations=recs,
                           details={"repeats_per_step": round(hit.count / window.steps, 3), "ops": hit.details.get("ops") or [],
                                    "context": hit.details.get("context") or "step"})


def _optimizer(hit: PatternHit, window: Window) -> Finding:
    name = str(hit.details.get("optimizer") or "optimizer")
    impl = str(hit.details.get("implementation") or "for-loop")
    ops = f": {hit.count / window.steps:.0f} per-tensor ops a step" if hit.count else ""
    message = (f"{name} runs its single-tensor loop ({impl}{ops}): its step takes {cost_text(window, hit.us)}; "
               "foreach=True (or fused=True) updates all parameters in a few ops")
    evidence = [Evidence(f"{_where(hit)}: the optimizer's step ran {hit.count} per-tensor ops and no _foreach_/_fused_ op in "
                         f"{hit.steps} recorded steps ({hit.us / 1000:.2f} ms in all)" if hit.count else
                         f"{_where(hit)}: {impl} took the optimizer's time on this line ({hit.us / 1000:.2f} ms in {hit.steps} "
                         "recorded steps)", hit.path, hit.line)]
    recs = [Recommendation(
        f"Construct {name} with foreach=True, or fused=True on CUDA",
        "The single-tensor loop launches several ops per parameter tensor; the foreach implementation groups the tensors into "
        "a few multi-tensor ops, and fused=True does the whole update in one kernel (AdamW(fused=True): one kernel instead of "
        "one per parameter tensor).",
        f"optimizer = torch.optim.{name}(model.parameters(), lr=lr, foreach=True)",
    )]
    return pattern_finding("TTR504", hit.path, hit.line, message, window, hit.us, evidence=evidence, recommendations=recs,
                           details={"optimizer": name, "implementation": impl, "ops_per_step": round(hit.count / window.steps, 3)})


def _zero_grad(hit: PatternHit, window: Window) -> Finding:
    us = hit.us + hit.gpu_us
    message = (f"zero_grad fills {hit.count / window.steps:.0f} gradients with zeros every step instead of dropping them, "
               f"costing {cost_text(window, us)}: call zero_grad(set_to_none=True)")
    evidence = [Evidence(f"{_where(hit)}: {hit.count} aten::zero_ calls from zero_grad in {hit.steps} recorded steps, "
                         f"{hit.us / 1000:.3f} ms on the CPU and {hit.gpu_us / 1000:.3f} ms of fills on the GPU in all",
                         hit.path, hit.line)]
    recs = [Recommendation(
        "optimizer.zero_grad(set_to_none=True) (the default since torch 2.0)",
        "Setting gradients to None skips a fill per parameter and lets backward write each gradient instead of adding to "
        "zeros; the memory is handed back between steps.",
        "optimizer.zero_grad(set_to_none=True)",
    )]
    return pattern_finding("TTR507", hit.path, hit.line, message, window, us, evidence=evidence, recommendations=recs,
                           details={"tensors_per_step": round(hit.count / window.steps, 3), "gpu_ms": round(hit.gpu_us / 1000, 4)})


def _conv_bias(hit: PatternHit, window: Window) -> Finding:
    message = (f"a convolution with a bias feeds a batch norm, which subtracts the mean and so cancels the bias: the "
               f"convolution's call takes {cost_text(window, hit.us)} (the bias is part of it); set bias=False")
    evidence = [Evidence(f"{_where(hit)}: aten::conv with a bias input, then a BatchNorm call next, {hit.count} times in "
                         f"{hit.steps} recorded steps", hit.path, hit.line)]
    recs = [Recommendation(
        "Construct the Conv layer with bias=False",
        "A batch norm right after the convolution removes any per-channel constant, so the bias only costs its add, its "
        "gradient, and its optimizer state.",
        "nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)",
    )]
    return pattern_finding("TTR509", hit.path, hit.line, message, window, hit.us, evidence=evidence, recommendations=recs,
                           details={"calls_per_step": round(hit.count / window.steps, 3)})


BUILDERS = {"created_then_moved": _moved, "indexing_loop": _indexing, "single_tensor_optimizer": _optimizer,
            "zero_grad_fills": _zero_grad, "conv_bias_before_bn": _conv_bias}


def profiled_hits(profile: ProfileData) -> list[PatternHit]:
    """What a profiled run (no trace facts) shows of these patterns: an optimizer line whose time went to a
    ``_single_tensor_*`` function (the agent charges Python functions by name)."""
    hits = []
    for cost in profile.lines:
        single = next((n for n in cost.top_names if n.startswith("_single_tensor_")), "")
        if cost.category == "optimizer" and single and cost.self_us > 0:
            kind = single[len("_single_tensor_"):]
            names = [o.name for o in (profile.memory_shape.optimizers if profile.memory_shape else []) if o.name.lower() == kind]
            hits.append(PatternHit("single_tensor_optimizer", cost.path, cost.line, cost.function, cost.self_us, 0.0, 0,
                                   profile.steps_profiled, {"optimizer": names[0] if names else kind, "implementation": single}))
    return hits


def matcher_findings(profile: ProfileData, facts: TraceFacts | None, static: Sequence[Finding]) -> list[Finding]:
    """One finding per (pattern, line) the trace placed (a profiled run: ``profiled_hits``), unless a static finding
    of its twin rule covers that line."""
    if not profile.steps:
        return []
    window = Window.of(profile)
    out = []
    for hit in (facts.patterns if facts is not None else profiled_hits(profile)):
        build = BUILDERS.get(hit.kind)
        if build is None or not hit.placed or hit.us + hit.gpu_us <= 0:
            continue
        if said_by(static, TWINS[hit.kind], hit.path, hit.line, profile.cwd):
            continue
        out.append(build(hit, window))
    return out
