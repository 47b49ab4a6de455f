"""TT502: ``torch.compile`` called inside the training loop."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Severity
from ..module_index import may_end_in
from .base import Invalid, Report, Rule, RuleContext, Valid


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
        Valid(
            """
            import torch
            # regional compilation: each block compiled once, before training
            for i, block in enumerate(model.blocks):
                model.blocks[i] = torch.compile(block, dynamic=False)
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            import torch
            class Trainer:
                def train_step(self, batch):
                    if self._compiled_step is None:          # compiled lazily, once
                        self._compiled_step = torch.compile(self._step)
                    loss = self._compiled_step(batch)
                    loss.backward()
                    self.optimizer.step()

                def fit(self, loader):
                    for batch in loader:
                        self.train_step(batch)
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
        Invalid(
            """
            import torch
            for step, (x, y) in enumerate(train_loader):
                @torch.compile(mode="reduce-overhead")
                def forward(inp):
                    return model(inp)
                loss = criterion(forward(x), y)
                loss.backward()
                optimizer.step()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            import torch
            step = 0
            while step < max_steps:
                x, y = next(data_iter)
                opt_model = torch.compile(model, fullgraph=True)
                loss = criterion(opt_model(x), y)
                loss.backward()
                optimizer.step()
                step += 1
            """,
            lines=(5,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        if "compile" not in ctx.source:
            return  # (both shapes spell it out)
        epoch_loops = set(ctx.hot.epoch_loops)
        hot_nodes = {region.node for region in ctx.hot.regions}
        compile_names = ctx.names_ending_in(_COMPILE)
        for node in ctx.nodes_of((ast.Call, ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(node, ast.Call) and may_end_in(node.func, _COMPILE, compile_names) and ctx.qualname(node.func) == "torch.compile":
                if _compiles_loop_item(ctx, node) or _lazily_once(ctx, node):
                    continue
                if ctx.hot.is_per_step(node) or _in_loop(ctx, node, epoch_loops):
                    yield Report(
                        node,
                        "`torch.compile` inside the loop recompiles on every pass; compile once before the loop",
                    )
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorator = next((d for d in node.decorator_list if _is_compile_decorator(ctx, d)), None)
                if decorator is not None and _defined_per_pass(ctx, node, hot_nodes | epoch_loops):
                    yield Report(
                        decorator,
                        f"`@torch.compile` on `{node.name}` defined inside the loop compiles a new function "
                        "every pass; define and compile it once, outside the loop",
                    )


_COMPILE = frozenset({"compile"})


def _in_loop(ctx: RuleContext, node: ast.AST, epoch_loops: set[ast.AST]) -> bool:
    """Inside an epoch loop of the same function (not behind a first-epoch guard)."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        if isinstance(ancestor, ast.If) and node in _walk_body(ancestor) and _is_first_epoch_guard(ancestor):
            return False
        if ancestor in epoch_loops:
            return True
    return False


def _compiles_loop_item(ctx: RuleContext, call: ast.Call) -> bool:
    """``for block in model.blocks: torch.compile(block)``: each item compiled once (regional compile)."""
    if not call.args or not isinstance(call.args[0], ast.Name):
        return False
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        if isinstance(ancestor, (ast.For, ast.AsyncFor)):
            return any(isinstance(n, ast.Name) and n.id == call.args[0].id for n in ast.walk(ancestor.target))
    return False


def _lazily_once(ctx: RuleContext, call: ast.Call) -> bool:
    """``if compiled is None: compiled = torch.compile(...)``: the guard tests what the body sets."""
    statement = ctx.enclosing_statement(call)
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)):
        return False
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    assigned = {ctx.dotted(t) for t in targets} - {None}
    for ancestor in ctx.ancestors(statement):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, *_LOOPS)):
            return False
        if isinstance(ancestor, ast.If):
            tested = {ctx.dotted(n) for n in ast.walk(ancestor.test) if isinstance(n, (ast.Name, ast.Attribute))}
            tested |= {n.value for n in ast.walk(ancestor.test) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            if any(a in tested or a.rsplit(".", 1)[-1] in tested for a in assigned if a):
                return True
    return False


def _is_compile_decorator(ctx: RuleContext, decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ctx.qualname(target) == "torch.compile"


def _defined_per_pass(ctx: RuleContext, func: ast.AST, hot: set[ast.AST]) -> bool:
    """A ``def`` statement that runs every step or epoch (inside such a loop or per-step function)."""
    for ancestor in ctx.ancestors(func):
        if ancestor in hot:
            return True
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
    return False


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


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
