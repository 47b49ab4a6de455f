"""TT104: ``torch.cuda.synchronize()`` every step outside timing code."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Severity
from ..fixes import remove_statement_fix
from ..incremental.memo import keyed_memo
from ._steplog import CLOCK_CALLS
from .base import Invalid, Report, Rule, RuleContext, Valid

SYNC_CALLS = frozenset({"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.xpu.synchronize", "torch.mps.synchronize"})
_TIMING_METHODS = frozenset({"record", "elapsed_time"})


def is_synchronize(ctx: RuleContext, call: ast.Call) -> bool:
    qual = ctx.qualname(call.func) or ""
    if qual in SYNC_CALLS:
        return True
    # torch.cuda.current_stream().synchronize()
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "synchronize"
        and isinstance(func.value, ast.Call)
        and (ctx.qualname(func.value.func) or "").endswith(("current_stream", "default_stream"))
    )


def _block_times_something(ctx: RuleContext, statement: ast.stmt) -> bool:
    """Whether the step around the statement reads a clock or records CUDA events (timing code).

    Looks at the statement's block, then at the blocks of the ``if`` / ``with``
    / ``try`` statements around it, up to the loop or function body, so that
    ``if args.sync: torch.cuda.synchronize()`` followed by ``time.time()`` counts.
    """
    current: ast.AST = statement
    while True:
        parent = ctx.parents.get(current)
        if parent is None:
            return False
        for _, value in ast.iter_fields(parent):
            if isinstance(value, list) and current in value and any(_reads_clock(ctx, s) for s in value):
                return True
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            return False
        current = parent


def _reads_clock(ctx: RuleContext, statement: ast.AST) -> bool:
    """Whether the statement reads a clock or records CUDA events (kept on it while the imports
    stay the same: every statement of a long loop body is asked after each edit)."""
    return keyed_memo(statement, "tt104-reads-clock", ctx.aliases_key, lambda: _reads_clock_below(ctx, statement))


def _reads_clock_below(ctx: RuleContext, statement: ast.AST) -> bool:
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            if (ctx.qualname(node.func) or "") in CLOCK_CALLS:
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr in _TIMING_METHODS:
                return True
    return False


class SynchronizeInStep(Rule):
    code = "TT104"
    name = "cuda-synchronize-in-step"
    severity = Severity.WARNING
    category = "host_sync"
    requires_cuda = True
    summary = "`torch.cuda.synchronize()` runs every step outside any timing code."
    why = """
        A device-wide synchronize makes the CPU wait until the GPU has finished
        all queued work, so the next step's kernels cannot be queued while the
        current ones run. Each one costs a forced sync (roughly 1-5 ms a step
        in practitioners' numbers) plus the lost overlap; in the trace it
        shows as `cudaDeviceSynchronize` with the GPU idle right after it.
        Synchronize only where you read a clock to time GPU work.
    """
    fix_description = "Remove the call; keep synchronize only right before reading a clock in timing code."
    fix_applicability = Applicability.UNSAFE
    example_bad = """
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward(); optimizer.step()
            torch.cuda.synchronize()
    """
    example_good = """
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward(); optimizer.step()
    """
    VALID = (
        Valid(
            """
            import time, torch
            model.cuda()
            for x, y in loader:
                t0 = time.perf_counter()
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
                torch.cuda.synchronize()
                step_times.append(time.perf_counter() - t0)
            """
        ),
        Valid(
            """
            import torch
            model.cuda()
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
                if step % 100 == 0:
                    torch.cuda.synchronize()
                    report(step)
            """
        ),
        Valid(
            """
            import torch
            model.cuda()
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
            torch.cuda.synchronize()   # once, after training
            """
        ),
        Valid(
            """
            import torch
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for x, y in loader:
                start.record()
                loss = model(x.cuda()).sum(); loss.backward(); optimizer.step()
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
            """
        ),
        Valid(
            """
            import time, torch
            device = torch.device("cuda")
            for batch_idx, (x, y) in enumerate(loader):
                loss = criterion(model(x.to(device)), y.to(device))
                loss.backward()
                optimizer.step()
                if args.synchronize_step:
                    if device.type == "cuda":
                        torch.cuda.synchronize()   # opt-in, for honest step times
                time_now = time.time()
                step_times.append(time_now - last)
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            import torch
            model = model.cuda()
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                torch.cuda.synchronize()
            """,
            lines=(7,),
            fixed="""
            import torch
            model = model.cuda()
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """,
        ),
        Invalid(
            """
            from torch import cuda
            def train_step(batch):
                loss = model(batch.cuda()).mean()
                loss.backward()
                cuda.synchronize()

            for batch in loader:
                train_step(batch)
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch
            device = "cuda"
            while True:
                x, y = next(batches)
                loss = criterion(model(x.to(device)), y.to(device))
                loss.backward(); opt.step()
                torch.cuda.current_stream().synchronize()
            """,
            lines=(7,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        for call, _ in ctx.hot.nodes(ast.Call):
            if not is_synchronize(ctx, call):
                continue
            statement = ctx.enclosing_statement(call)
            if statement is None or _block_times_something(ctx, statement):
                continue
            yield Report(
                call,
                "Device synchronize every step stalls the CPU until the GPU drains; remove it "
                "(synchronize only right before reading a clock)",
                fix=lambda statement=statement, call=call: (
                    remove_statement_fix(ctx, statement, "Remove the per-step synchronize", Applicability.UNSAFE)
                    if isinstance(statement, ast.Expr) and statement.value is call
                    else None
                ),
            )
