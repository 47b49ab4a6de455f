"""TT507: ``zero_grad(set_to_none=False)`` every step."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from ...findings import Applicability, Severity
from ..fixes import replace_expression
from ..syntax import keyword_value
from ._helpers import method_name
from ._steps import is_constant, own_walk, step_family
from .base import Invalid, Report, Rule, RuleContext, Valid

# Code that needs gradient buffers to stay allocated: CUDA graph capture.
_STATIC_GRADS = re.compile(r"torch\.cuda\.graph\b|CUDAGraph|make_graphed_callables|capturable\s*=\s*True")


def _static_grads(ctx: RuleContext) -> bool:
    """Whether gradients must keep their memory (CUDA graphs, capturable optimizers): searched
    only once a candidate is found (a scan of the whole text on every edit otherwise)."""
    return bool(_STATIC_GRADS.search(ctx.source))


def _set_to_none_false(call: ast.Call) -> ast.expr | None:
    """The ``False`` that keeps gradients allocated, if the call passes one."""
    value = keyword_value(call, "set_to_none")
    if value is None and call.args:
        value = call.args[0]
    return value if is_constant(value, False) else None


def _touches_grad(ctx: RuleContext, call: ast.Call) -> bool:
    """Whether the step reads or writes ``.grad`` itself (hand-made accumulation)."""
    region = ctx.hot.region_of(call)
    if region is None:
        return True
    return any(
        isinstance(node, ast.Attribute) and node.attr == "grad"
        for member in step_family(ctx, region)
        for node in own_walk(member.node)
    )


class ZeroGradKeepsTensors(Rule):
    code = "TT507"
    name = "zero-grad-keeps-tensors"
    severity = Severity.INFO
    category = "compute"
    summary = "`zero_grad(set_to_none=False)` fills every gradient with zeros each step instead of freeing it."
    why = """
        With `set_to_none=False` every step launches memset work over all
        gradient buffers, and backward then accumulates into those zeros
        instead of simply writing fresh gradients. The buffers, as large as
        the model's parameters, also stay allocated through the forward pass,
        raising peak memory. On small models each extra kernel costs the
        5-20 µs launch latency on top. `set_to_none=True` (the default since
        PyTorch 2.0) skips all of that; the optimizer treats a `None` gradient
        like a zero one.
    """
    fix_description = "Pass `set_to_none=True` (or drop the argument: it is the default)."
    fix_applicability = Applicability.SAFE
    example_bad = """
        for x, y in loader:
            optimizer.zero_grad(set_to_none=False)
            criterion(model(x), y).backward()
            optimizer.step()
    """
    example_good = """
        for x, y in loader:
            optimizer.zero_grad(set_to_none=True)
            criterion(model(x), y).backward()
            optimizer.step()
    """
    VALID = (
        Valid(
            """
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # gradients accumulated by hand across micro-batches: they must exist
            for x, y in loader:
                model.zero_grad(set_to_none=False)
                criterion(model(x), y).backward()
                for p, acc in zip(model.parameters(), grad_sums):
                    acc.add_(p.grad)
                optimizer.step()
            """
        ),
        Valid(
            """
            # CUDA graph capture needs static gradient buffers
            g = torch.cuda.graph(graph)
            for x, y in loader:
                optimizer.zero_grad(set_to_none=False)
                static_loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            optimizer.zero_grad(set_to_none=False)  # once, before training
            for x, y in loader:
                criterion(model(x), y).backward()
                optimizer.step()
                optimizer.zero_grad()
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            for x, y in loader:
                optimizer.zero_grad(set_to_none=False)
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """,
            lines=(2,),
            fixed="""
            for x, y in loader:
                optimizer.zero_grad(set_to_none=True)
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """,
        ),
        Invalid(
            """
            class Trainer:
                def train_step(self, batch):
                    self.model.zero_grad(False)
                    loss = self.model(batch).mean()
                    loss.backward()
                    self.opt.step()

                def fit(self):
                    for batch in self.train_loader:
                        self.train_step(batch)
            """,
            lines=(3,),
            fixed="""
            class Trainer:
                def train_step(self, batch):
                    self.model.zero_grad(True)
                    loss = self.model(batch).mean()
                    loss.backward()
                    self.opt.step()

                def fit(self):
                    for batch in self.train_loader:
                        self.train_step(batch)
            """,
        ),
        Invalid(
            """
            for epoch in range(10):
                for i, (x, y) in enumerate(loader):
                    opt_d.zero_grad(set_to_none=False)
                    d_loss = criterion(disc(x), y)
                    d_loss.backward()
                    opt_d.step()
                    opt_g.zero_grad(set_to_none=False)
                    g_loss = criterion(disc(gen(z)), y)
                    g_loss.backward()
                    opt_g.step()
            """,
            lines=(3, 7),
        ),
        Invalid(
            """
            # gradient accumulation: the boundary runs once per optimizer step
            for step, (x, y) in enumerate(loader):
                criterion(model(x), y).backward()
                if (step + 1) % accum_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=False)
            """,
            lines=(6,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        for call, _region in ctx.hot.nodes(ast.Call):
            if method_name(call) != "zero_grad":
                continue
            false = _set_to_none_false(call)
            if false is None or _touches_grad(ctx, call):
                continue
            if _static_grads(ctx):
                return
            yield Report(
                call,
                "`zero_grad(set_to_none=False)` zero-fills every gradient each step: "
                "use `set_to_none=True` (the default)",
                fix=lambda node=false: replace_expression(
                    ctx, node, lambda e: e.with_changes(value="True"), "Set set_to_none=True", Applicability.SAFE
                ),
            )
