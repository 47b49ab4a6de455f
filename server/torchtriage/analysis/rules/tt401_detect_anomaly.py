"""TT401: autograd anomaly detection left on in a training script."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from ...findings import Applicability, Severity
from ..fixes import replace_expression
from ..hotloops.finder import LIGHTNING_STEP_METHODS, is_backward_call, is_optimizer_step
from ..syntax import keyword_value
from ._steps import is_constant
from .base import Invalid, Report, Rule, RuleContext, Valid

_SET = frozenset({"torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly"})
_CONTEXT = frozenset({"torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly"})
_DEBUG = re.compile(r"debug|anomal|detect|nan_check|check_nan", re.I)


def _is_trainer(ctx: RuleContext, call: ast.Call) -> bool:
    return (ctx.call_qualname(call) or "").split(".")[-1] == "Trainer"


def _trains(ctx: RuleContext) -> bool:
    """Whether the file trains: backward, an optimizer step, a Lightning step or Trainer."""
    for node in ctx.nodes_of((ast.Call, ast.FunctionDef)):
        if is_backward_call(node) or is_optimizer_step(node):
            return True
        if isinstance(node, ast.FunctionDef) and node.name in LIGHTNING_STEP_METHODS:
            return True
        if isinstance(node, ast.Call) and _is_trainer(ctx, node):
            return True
    return False


def _debug_words(ctx: RuleContext, node: ast.AST) -> bool:
    words = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    words += [n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)]
    words += [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return any(_DEBUG.search(word) for word in words)


def _opted_in(ctx: RuleContext, node: ast.AST) -> bool:
    """Under a debug switch (``if args.debug:``, ``def debug_nans():``) or an expected-error test."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.If, ast.IfExp, ast.While)) and _debug_words(ctx, ancestor.test):
            return True
        if isinstance(ancestor, ast.With) and any(
            (ctx.call_qualname(item.context_expr) or "").endswith("raises") for item in ancestor.items
        ):
            return True  # ``with pytest.raises(...): Trainer(detect_anomaly=True)`` tests the error
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)) and _DEBUG.search(ancestor.name):
            return True
    return False


def _enabling_argument(call: ast.Call) -> ast.expr | None:
    """The literal ``True`` passed as ``mode``, if any."""
    value = call.args[0] if call.args else keyword_value(call, "mode")
    return value if is_constant(value, True) else None


class AnomalyDetectionEnabled(Rule):
    code = "TT401"
    name = "anomaly-detection-enabled"
    severity = Severity.WARNING
    category = "debugging"
    summary = "Autograd anomaly detection is switched on in code that trains."
    why = """
        Anomaly detection records a traceback for every operation in the
        forward pass and checks every backward function's output for NaNs.
        That roughly doubles backward time and slows the forward too: it is a
        tool for finding where a NaN comes from, not a training setting, and it
        is easy to forget once the bug is fixed. Keep it behind a debug flag
        (`if args.debug:`); calls guarded like that, or whose argument is not a
        literal `True`, are not reported.
    """
    fix_description = (
        "Turn it off: `set_detect_anomaly(False)` / `Trainer(detect_anomaly=False)`, or enable it only "
        "under a debug flag. The `with torch.autograd.detect_anomaly():` form has no automatic fix."
    )
    fix_applicability = Applicability.UNSAFE
    example_bad = """
        torch.autograd.set_detect_anomaly(True)
        for x, y in loader:
            criterion(model(x), y).backward()
    """
    example_good = """
        torch.autograd.set_detect_anomaly(args.debug)
        for x, y in loader:
            criterion(model(x), y).backward()
    """
    VALID = (
        Valid(
            """
            import torch
            if args.debug:
                torch.autograd.set_detect_anomaly(True)
            for x, y in loader:
                criterion(model(x), y).backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            import torch
            torch.autograd.set_detect_anomaly(args.detect_anomaly)
            for x, y in loader:
                criterion(model(x), y).backward()
            """
        ),
        Valid(
            """
            # inference script: nothing is trained
            import torch
            torch.autograd.set_detect_anomaly(True)
            with torch.no_grad():
                preds = [model(x) for x in batches]
            """
        ),
        Valid(
            """
            from torch import autograd
            autograd.set_detect_anomaly(False)
            for x, y in loader:
                criterion(model(x), y).backward()
            """
        ),
        Valid(
            """
            import torch
            def debug_nan_step(model, batch):
                with torch.autograd.detect_anomaly():
                    model(batch).sum().backward()
            """
        ),
        Valid(
            """
            import pytest
            from lightning.pytorch import Trainer
            def test_rejects_anomaly_with_barebones():
                with pytest.raises(ValueError):
                    Trainer(barebones=True, detect_anomaly=True)
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            import torch
            torch.autograd.set_detect_anomaly(True)  # chasing a NaN last week

            def train(model, loader, optimizer):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
            """,
            lines=(2,),
            fixed="""
            import torch
            torch.autograd.set_detect_anomaly(False)  # chasing a NaN last week

            def train(model, loader, optimizer):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
            """,
        ),
        Invalid(
            """
            import torch.autograd as ag
            for x, y in loader:
                with ag.detect_anomaly():
                    loss = criterion(model(x), y)
                    loss.backward()
                optimizer.step()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            from torch.autograd import set_detect_anomaly
            def main():
                set_detect_anomaly(mode=True)
                for batch in train_loader:
                    model(batch).loss.backward()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            import lightning as L
            trainer = L.Trainer(max_epochs=10, precision="bf16-mixed", detect_anomaly=True)
            trainer.fit(model, datamodule=dm)
            """,
            lines=(2,),
            fixed="""
            import lightning as L
            trainer = L.Trainer(max_epochs=10, precision="bf16-mixed", detect_anomaly=False)
            trainer.fit(model, datamodule=dm)
            """,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        if "anomaly" not in ctx.source or not _trains(ctx):
            return
        for node in ctx.nodes_of(ast.Call):
            if not isinstance(node, ast.Call) or _opted_in(ctx, node):
                continue
            qual = ctx.call_qualname(node) or ""
            if qual in _SET:
                argument = _enabling_argument(node)
                if argument is not None:
                    yield self._report(ctx, node, argument, "`set_detect_anomaly(True)`")
            elif qual in _CONTEXT and self._is_context(ctx, node) and not self._disabled(node):
                yield Report(
                    node,
                    "`detect_anomaly()` around training roughly doubles backward time: "
                    "remove it, or enter it only under a debug flag",
                )
            elif _is_trainer(ctx, node):
                value = keyword_value(node, "detect_anomaly")
                if is_constant(value, True):
                    yield self._report(ctx, node, value, "`Trainer(detect_anomaly=True)`")  # type: ignore[arg-type]

    @staticmethod
    def _is_context(ctx: RuleContext, call: ast.Call) -> bool:
        return isinstance(ctx.parents.get(call), ast.withitem)

    @staticmethod
    def _disabled(call: ast.Call) -> bool:
        """``detect_anomaly(False)`` is an explicit no-op."""
        return bool(call.args) and is_constant(call.args[0], False)

    @staticmethod
    def _report(ctx: RuleContext, call: ast.Call, argument: ast.expr, what: str) -> Report:
        return Report(
            call,
            f"{what} in training code roughly doubles backward time: "
            "turn it off, or enable it only under a debug flag",
            fix=lambda: replace_expression(
                ctx, argument, lambda e: e.with_changes(value="False"), "Turn anomaly detection off",
                Applicability.UNSAFE,
            ),
        )
