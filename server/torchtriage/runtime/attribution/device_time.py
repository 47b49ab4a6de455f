"""Step time on a GPU that the CPU runs ahead of: when a step really ends, and what it waited for.

A script with no sync in its step launches kernels and moves on; the CPU's
``ProfilerStep`` ranges then measure the launches, not the work.  On an H100
``examples/big_matmul.py`` took 2.1-2.6 ms a step by those ranges and 7.4 ms
by a synchronised clock, with 7.2 ms of kernels a step (bench/gpu, README).
In steady state each step ends when the GPU finishes its last kernel, so the
step's real time is the distance between the GPU end of its kernels and the
GPU end of the step before's.

The GPU work of each step comes from the exported trace when there is one
(``trace.Trace.device_work``: every kernel, whichever thread launched it),
else from the kernels the agent saw in its event tree (``agent_work``).
``gpu_bound_steps`` compares that distance with the CPU's range, step by step.
It only takes effect when the GPU fell behind over the whole window (its ends
spread over more than ``GPU_BEHIND`` times the CPU's steps): a CPU-bound run's
GPU ends jitter around the CPU's and are left alone.  A step the GPU held up
gets its extra time (``StepTiming.device_backlog_us``), and its categories
become the GPU's: kernel time is compute (NCCL kernels: communication), the
rest of the step the GPU sat idle; the CPU's work in that step ran under the
GPU's and cost nothing.

In the other steps the CPU paced the GPU, and a sync in them (``.item()``,
``print(tensor)``) blocks the CPU until the kernels queued before it finish.
Only the part of that wait the GPU spent idle can be won back by removing the
sync: while the GPU runs the queued kernels the step is the GPU's work either
way.  ``sync_waits_on_busy_gpu`` gives compute the rest (on an H100,
examples/sync_every_step.py's CPU waited 6.6 ms of its 12.6 ms step in syncs,
while the GPU sat idle 2.6 ms of it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from ..agent.wire import GpuActivity
from ..results.profile_data import CATEGORIES, StepTiming
from ..trace import StepWork, load_trace

GPU_BEHIND = 1.03  # GPU ends spread over this many times the CPU's steps: the GPU sets the pace


def agent_work(steps: Sequence[StepTiming], gpu: Sequence[GpuActivity]) -> dict[int, StepWork]:
    """Step number -> GPU work, from the kernels the agent tied to a recorded step (microseconds)."""
    work: dict[int, StepWork] = {}
    for kernel in gpu:
        if 0 <= kernel.step < len(steps):
            work.setdefault(steps[kernel.step].index, StepWork()).add(kernel.name, kernel.start_ns / 1000.0, kernel.ns / 1000.0)
    return work


def device_work(steps: Sequence[StepTiming], gpu: Sequence[GpuActivity], trace_path: Optional[str]) -> dict[int, StepWork]:
    """The GPU work of the recorded steps: from the trace when it can be read, else from the agent's kernels."""
    recorded = {step.index for step in steps}
    if trace_path:
        try:
            work = load_trace(Path(trace_path)).device_work()
        except (OSError, ValueError):
            work = {}
        work = {number: entry for number, entry in work.items() if number in recorded}
        if work:
            return work
    return agent_work(steps, gpu)


def gpu_bound_steps(steps: Sequence[StepTiming], work: dict[int, StepWork], per_step: list[dict[str, float]]) -> int:
    """Set each GPU-bound step's backlog and GPU-view category times in place; returns how many steps were."""
    positions = [p for p, step in enumerate(steps) if step.index in work and work[step.index].kernels]
    # pairs of steps that follow each other (a step the agent dropped would make its neighbours look slow)
    pairs = [(a, b) for a, b in zip(positions, positions[1:]) if steps[b].index == steps[a].index + 1]
    if not pairs:
        return 0
    end = {p: work[steps[p].index].end_us for p in positions}
    gpu_span = sum(end[b] - end[a] for a, b in pairs)
    cpu_span = sum(steps[b].duration_us for _, b in pairs)
    if gpu_span <= GPU_BEHIND * cpu_span:
        return 0
    held = 0
    for before, position in pairs:
        step = steps[position]
        backlog = end[position] - end[before] - step.duration_us
        if backlog <= 0:
            continue
        step.device_backlog_us = round(backlog, 3)
        total = step.duration_us
        done = work[step.index]
        kernels = min(done.busy_us, total)
        comm = min(done.communication_us, kernels)
        times = {category: 0.0 for category in CATEGORIES}
        times.update(compute=round(kernels - comm, 3), communication=round(comm, 3), idle=round(total - kernels, 3))
        per_step[position] = times
        held += 1
    return held


def sync_waits_on_busy_gpu(steps: Sequence[StepTiming], work: dict[int, StepWork], per_step: list[dict[str, float]]) -> float:
    """In the CPU-paced steps, move the sync wait beyond the step's GPU idle time to compute, in place;
    returns the microseconds moved.  A removed sync saves at most the time the GPU sat idle (module doc)."""
    moved = 0.0
    for position, step in enumerate(steps):
        done = work.get(step.index)
        if done is None or not done.kernels or step.device_backlog_us > 0:
            continue
        times = per_step[position]
        gpu_idle = max(0.0, step.duration_us - min(done.busy_us, step.duration_us))
        excess = times["host_sync"] - gpu_idle
        if excess > 0:
            times["host_sync"] = round(times["host_sync"] - excess, 3)
            times["compute"] = round(times["compute"] + excess, 3)
            moved += excess
    return moved
