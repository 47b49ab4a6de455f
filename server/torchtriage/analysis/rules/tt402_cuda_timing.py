"""TT402: wall-clock timing of CUDA work without synchronising first."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Fix, Severity
from ..fixes import insert_lines_fix
from ..hotloops.finder import in_main_block
from ._tt402_timing import torch_alias, unsynced_timings
from .base import Invalid, Report, Rule, RuleContext, Valid


def _sync_fix(ctx: RuleContext, read: ast.Call) -> Fix | None:
    """Insert ``torch.cuda.synchronize()`` on its own line before the closing read."""
    torch = torch_alias(ctx)
    statement = ctx.enclosing_statement(read)
    if torch is None or statement is None:
        return None
    line = ctx.lines[statement.lineno - 1]
    prefix = line[: ctx.char_column(statement.lineno, statement.col_offset)]
    if prefix.strip() or line.lstrip().startswith("elif"):
        return None  # ``for ...: t = time.time()`` or an ``elif`` test: no line to insert before
    return insert_lines_fix(
        ctx, statement.lineno, [f"{torch}.cuda.synchronize()"], "Synchronize before reading the clock",
        Applicability.SAFE,
    )


class CudaTimingWithoutSync(Rule):
    code = "TT402"
    name = "cuda-timing-without-sync"
    severity = Severity.WARNING
    category = "host_sync"
    requires_cuda = True
    summary = (
        "A `time.time()` / `time.perf_counter()` timing (kept in a variable or an attribute such as "
        "`self.t_prev`) brackets CUDA work with no `torch.cuda.synchronize()` before the closing read."
    )
    why = """
        CUDA kernels run asynchronously: `model(x)`, `backward()` and
        `optimizer.step()` return as soon as their kernels are queued. A
        clock read right after them measures how long the CPU took to launch
        the work (launch latency is about 5-20 µs per kernel), not how long
        the GPU took to run it, so forward/backward splits and short
        benchmarks come out wrong, and the time shows up instead wherever the
        next sync happens (an `.item()` that looks mysteriously slow). Synchronise
        before reading the clock, or time with `torch.cuda.Event(enable_timing=True)`,
        and skip warm-up steps, which are dominated by allocation and compilation.
    """
    fix_description = "Insert `torch.cuda.synchronize()` on the line before the closing clock read."
    fix_applicability = Applicability.SAFE
    example_bad = """
        start = time.perf_counter()
        loss = criterion(model(x), y)
        loss.backward()
        elapsed = time.perf_counter() - start
    """
    example_good = """
        start = time.perf_counter()
        loss = criterion(model(x), y)
        loss.backward()
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    """
    VALID = (
        Valid(
            """
            # the clock is taken again only after each synchronised validation: the time read every step spans all
            # the steps since then (a running total), where a step's queued work is noise
            import time
            import torch
            t0 = time.perf_counter()
            for step in range(num_steps + 1):
                if step == num_steps or step % 250 == 0:
                    torch.cuda.synchronize()
                    training_time += time.perf_counter() - t0
                    validate(model)
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                x, y = next(batches)
                model(x.cuda(), y.cuda()).backward()
                optimizer.step()
                print(f"train_time:{training_time + (time.perf_counter() - t0):.3f}s")
            """
        ),
        Valid(
            """
            # the time since training began, over all its steps so far (an ETA): a step's queued work is noise
            import time
            import torch
            model = model.cuda()
            start_time = time.time()
            for iteration, (x, y) in enumerate(loader, 1):
                loss = criterion(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
                eta_seconds = (time.time() - start_time) / iteration * (max_iters - iteration)
            """
        ),
        Valid(
            """
            import time, torch
            model = model.cuda()
            start = time.perf_counter()
            for _ in range(100):
                model(x)
            torch.cuda.synchronize()
            print(f"{(time.perf_counter() - start) / 100 * 1e3:.2f} ms/iter")
            """
        ),
        Valid(
            """
            import time, torch
            model.cuda()
            end = time.time()
            for i, (images, target) in enumerate(train_loader):
                data_time.update(time.time() - end)   # only the loader is timed here
                loss = criterion(model(images.cuda()), target.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.update(loss.item(), images.size(0))  # .item() waits for the GPU
                batch_time.update(time.time() - end)
                end = time.time()
            """
        ),
        Valid(
            """
            # CPU-only script: nothing is asynchronous
            import time
            t0 = time.time()
            loss = criterion(model(x), y)
            loss.backward()
            print("step took", time.time() - t0)
            """
        ),
        Valid(
            """
            import time, torch
            device = "cuda"
            t0 = time.time()
            batches = [b.to(device) for b in preload(files)]
            print(f"loaded in {time.time() - t0:.1f}s")
            """
        ),
        Valid(
            """
            import time, torch
            start_evt = torch.cuda.Event(enable_timing=True)
            end_evt = torch.cuda.Event(enable_timing=True)
            t0 = time.time()
            start_evt.record()
            out = model(x.cuda())
            end_evt.record()
            end_evt.synchronize()
            wall = time.time() - t0
            """
        ),
        Valid(
            """
            # the loss is read every step before backward: each interval ends on a sync
            import time, torch
            model.cuda()
            end = time.time()
            for i, (images, target) in enumerate(train_loader):
                loss = criterion(model(images.cuda()), target.cuda())
                meter.update(loss.item(), images.size(0))
                loss.backward()
                optimizer.step()
                batch_time.update(time.time() - end)
                end = time.time()
            """
        ),
        Valid(
            """
            import time, torch
            def evaluate(model, data):
                with torch.no_grad():
                    return criterion(model(data.x), data.y).item()

            def train_iter(model, data, optimizer):
                start = time.time()
                model(data.x.cuda()).sum().backward()
                optimizer.step()
                val_loss = evaluate(model, data)   # returns a Python float: synced
                print(f"{time.time() - start:.3f}s val {val_loss:.3f}")
            """
        ),
        Valid(
            """
            # read in the same logging branch as the .item() that syncs before it
            import time
            import torch
            start = time.time()
            for step, x in enumerate(loader):
                loss = model(x.cuda(non_blocking=True)).mean()
                loss.backward()
                optimizer.step()
                if step % 100 == 0:
                    stats = dict(step=step, loss=loss.item(), time=int(time.time() - start))
            """
        ),
        Valid(
            """
            # the whole run timed once after its epochs: at most the last step is still queued
            import time
            import torch
            t0 = time.time()
            for epoch in range(epochs):
                for imgs, targets in train_loader:
                    loss = compute_loss(model(imgs.cuda(non_blocking=True)), targets)
                    loss.backward()
                    optimizer.step()
            print(f"{epochs} epochs completed in {(time.time() - t0) / 3600:.3f} hours.")
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            import time
            import torch
            model = model.cuda()
            for step, (x, y) in enumerate(loader):
                t0 = time.perf_counter()
                loss = criterion(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
                step_time = time.perf_counter() - t0
            """,
            lines=(9,),
            fixed="""
            import time
            import torch
            model = model.cuda()
            for step, (x, y) in enumerate(loader):
                t0 = time.perf_counter()
                loss = criterion(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
                torch.cuda.synchronize()
                step_time = time.perf_counter() - t0
            """,
        ),
        Invalid(
            """
            # the clock is taken again in a branch that holds on every step: each read times one step
            import time
            import torch
            t0 = time.perf_counter()
            for step in range(num_steps):
                if model.training:
                    t0 = time.perf_counter()
                x, y = next(batches)
                model(x.cuda(), y.cuda()).backward()
                optimizer.step()
                print(f"step_time:{time.perf_counter() - t0:.3f}s")
            """,
            lines=(11,),
        ),
        Invalid(
            """
            # rolling per-iteration timer (t0 = t1), as many GPT training scripts write it
            import time
            import torch as th
            device = "cuda"
            t0 = time.time()
            while True:
                logits, loss = model(X, Y)
                loss.backward()
                optimizer.step()
                t1 = time.time()
                dt = t1 - t0
                t0 = t1
                if iter_num % log_interval == 0:
                    print(f"iter {iter_num}: loss {loss.item():.4f}, time {dt*1000:.2f}ms")
            """,
            lines=(10,),
            fixed="""
            # rolling per-iteration timer (t0 = t1), as many GPT training scripts write it
            import time
            import torch as th
            device = "cuda"
            t0 = time.time()
            while True:
                logits, loss = model(X, Y)
                loss.backward()
                optimizer.step()
                th.cuda.synchronize()
                t1 = time.time()
                dt = t1 - t0
                t0 = t1
                if iter_num % log_interval == 0:
                    print(f"iter {iter_num}: loss {loss.item():.4f}, time {dt*1000:.2f}ms")
            """,
        ),
        Invalid(
            """
            from time import perf_counter
            import torch
            @torch.no_grad()
            def benchmark(model, x, iters=50):
                model.to("cuda")
                start = perf_counter()
                for _ in range(iters):
                    model(x)
                return (perf_counter() - start) / iters
            """,
            lines=(9,),
        ),
        Invalid(
            """
            import time
            import torch
            def train_step(model, batch):
                tic = time.monotonic()
                out = model(batch.cuda())
                fwd = time.monotonic() - tic
                out.mean().backward()
                return fwd, time.monotonic() - tic
            """,
            lines=(6, 8),
        ),
        Invalid(
            """
            # a clock kept on an attribute, rolled over at the end of each iteration
            import time
            import torch
            class Trainer:
                def fit(self, loader):
                    self.last = time.time()
                    for x in loader:
                        loss = self.model(x.cuda(non_blocking=True)).sum()
                        loss.backward()
                        now = time.time()
                        self.step_time = now - self.last
                        self.last = now
            """,
            findings=(
                ("10:19-10:30", "`time()` is read while CUDA work since line 6 may still be queued, so this times "
                 "kernel launches, not the GPU: call `torch.cuda.synchronize()` first"),
            ),
        ),
        Invalid(
            """
            # the only sync between the work and the read is an evaluation every 500 steps
            import time
            import torch

            def evaluate(model, val_loader):
                return sum(model(x.cuda()).mean().item() for x in val_loader)

            def train(model, loader, val_loader, optimizer):
                for step, x in enumerate(loader):
                    t0 = time.time()
                    model(x.cuda()).mean().backward()
                    optimizer.step()
                    if step % 500 == 0:
                        val = evaluate(model, val_loader)
                    dt = time.time() - t0
            """,
            findings=(
                ("15:14-15:25", "`time()` is read while CUDA work since line 10 may still be queued, so this times "
                 "kernel launches, not the GPU: call `torch.cuda.synchronize()` first"),
            ),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        for timing in unsynced_timings(ctx):
            if ctx.imported and in_main_block(ctx, timing.read):
                continue  # the self-test or demo of a module the project imports: no part of training
            yield Report(
                timing.read,
                f"`{timing.clock}()` is read while CUDA work since line {timing.opening.lineno}"
                f"{' (in the previous iteration)' if timing.carried else ''} may still be "
                "queued, so this times kernel launches, not the GPU: call `torch.cuda.synchronize()` first",
                fix=lambda read=timing.read: _sync_fix(ctx, read),
            )
