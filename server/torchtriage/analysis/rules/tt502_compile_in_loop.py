"""TT502: ``torch.compile`` called inside the training loop."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Severity
from ..context import ModuleContext
from .base import Invalid, Report, Rule, Valid


class CompileInLoop(Rule):
    code = "TT502"
    name = "compile-in-loop"
    severity = Severity.ERROR
    category = "launch_overhead"
    summary = "`torch.compile(...)` is called inside a step or epoch loop."
    why = """
        `torch.compile` returns a new compiled module or function each time it is
        called; compiling inside the loop throws the previous one away, so every
        step (or epoch) pays for tracing and code generation again. The first
        call after compiling is 10-100x slower than steady state, and repeated
        recompiles also fill dynamo's cache (`cache_size_limit`, 8 by default),
        after which it silently falls back to eager mode - losing the 1.2-1.5x
        speed-up compile gives full training loops.
    """
    fix_description = "Compile once, before the loop (`model = torch.compile(model)`), and reuse the result."
    fix_applicability = None
    example_bad = """
        for x, y in loader:
            step_fn = torch.compile(train_step)
            step_fn(x, y)
    """
    example_good = """
        step_fn = torch.compile(train_step)
        for x, y in loader:
            step_fn(x, y)
    """
    VALID = (
        Valid(
            """
            import torch
            model = torch.compile(model)
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            import torch
            compiled = {}
            for name, candidate in candidates.items():    # benchmark setup, not training
                compiled[name] = torch.compile(candidate, mode="max-autotune")
            """
        ),
        Valid(
            """
            import torch
            for epoch in range(epochs):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward(); optimizer.step()
                if epoch == 0:
                    eval_model = torch.compile(model)   # once, on the first epoch
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            import torch
            for x, y in loader:
                fast = torch.compile(model)
                loss = criterion(fast(x), y)
                loss.backward()
                optimizer.step()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            import torch
            for epoch in range(epochs):
                model = torch.compile(model)       # recompiled every epoch
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward(); optimizer.step()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            from torch import compile as tcompile
            def train_step(model, batch):
                step = tcompile(model)
                loss = step(batch).mean()
                loss.backward()

            for batch in loader:
                train_step(model, batch)
            """,
            lines=(3,),
        ),
    )

    def check(self, ctx: ModuleContext) -> Iterator[Report]:
        epoch_loops = set(ctx.hot.epoch_loops)
        for node in ast.walk(ctx.tree):
            if not isinstance(node, ast.Call) or ctx.qualname(node.func) != "torch.compile":
                continue
            in_epoch_loop = False
            for ancestor in ctx.ancestors(node):
                if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    break
                if isinstance(ancestor, ast.If) and node in _walk_body(ancestor) and _is_first_epoch_guard(ancestor):
                    break
                if ancestor in epoch_loops:
                    in_epoch_loop = True
                    break
            if ctx.hot.is_per_step(node) or in_epoch_loop:
                yield Report(
                    node,
                    "`torch.compile` inside the loop recompiles on every pass; compile once before the loop",
                )


def _walk_body(node: ast.If) -> set[ast.AST]:
    return {sub for stmt in node.body for sub in ast.walk(stmt)}


def _is_first_epoch_guard(node: ast.If) -> bool:
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
    )
