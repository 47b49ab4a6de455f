"""TT103: Python control flow on a tensor's value every step."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Severity
from ..context import ModuleContext
from ..hotloops import is_rare_guard
from ._helpers import method_name
from ._tensors import is_tensor_expr, tensor_names
from .base import Invalid, Report, Rule, Valid

_PREDICATE_METHODS = frozenset({"isnan", "isinf", "isfinite", "any", "all", "eq", "equal", "allclose", "is_nonzero"})
_PREDICATE_FUNCTIONS = frozenset(
    {"torch.isnan", "torch.isinf", "torch.isfinite", "torch.any", "torch.all", "torch.equal", "torch.allclose", "torch.is_nonzero"}
)
_HOST_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad", "grad_fn", "training"})


def _reads_tensor_value(ctx: ModuleContext, test: ast.AST, known: frozenset[str]) -> ast.AST | None:
    """The sub-expression that makes Python look at a tensor's value, if any."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            if method_name(node) in ("item", "tolist", "size", "dim", "numel"):
                continue
            if method_name(node) in _PREDICATE_METHODS and is_tensor_expr(ctx, node.func.value, known):  # type: ignore[attr-defined]
                return node
            if (ctx.qualname(node.func) or "") in _PREDICATE_FUNCTIONS:
                return node
    if isinstance(test, ast.BoolOp):
        for value in test.values:
            found = _reads_tensor_value(ctx, value, known)
            if found is not None:
                return found
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _reads_tensor_value(ctx, test.operand, known)
    if isinstance(test, ast.Compare):
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in test.ops):
            return None
        for operand in (test.left, *test.comparators):
            if _is_value_of_tensor(ctx, operand, known):
                return test
    if isinstance(test, (ast.Name, ast.Attribute, ast.Subscript)) and _is_value_of_tensor(ctx, test, known):
        return test
    return None


def _is_value_of_tensor(ctx: ModuleContext, node: ast.AST, known: frozenset[str]) -> bool:
    if isinstance(node, ast.Attribute) and node.attr in _HOST_ATTRIBUTES:
        return False
    if any(isinstance(n, ast.Call) and method_name(n) in ("item", "tolist", "size") for n in ast.walk(node)):
        return False
    if isinstance(node, ast.Name):
        return node.id in known and node.id not in ()
    return is_tensor_expr(ctx, node, known)


class TensorBranchInStep(Rule):
    code = "TT103"
    name = "tensor-branch-in-step"
    severity = Severity.WARNING
    category = "host_sync"
    summary = "An `if`/`while`/`assert` tests a tensor's value every step (`if loss.isnan():`, `assert t.all()`)."
    why = """
        Python can only branch on a concrete value, so `if loss.isnan():` or
        `while err > tol:` copies the tensor to the host and waits for the GPU
        to finish everything queued before it - a hidden sync (about 1-5 ms a
        step in practitioners' measurements) that also stops `torch.compile`
        from capturing the step as one graph (a graph break).
    """
    fix_description = (
        "Check on the device and only occasionally on the host: accumulate a flag "
        "(`bad |= ~torch.isfinite(loss)`) and test it every N steps, use `torch._assert_async`, "
        "or use `torch.where` instead of a Python branch."
    )
    fix_applicability = None
    example_bad = """
        for x, y in loader:
            loss = criterion(model(x), y)
            if torch.isnan(loss):
                raise RuntimeError("nan loss")
    """
    example_good = """
        nonfinite = torch.zeros((), dtype=torch.bool, device=device)
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            nonfinite |= ~torch.isfinite(loss)
            if step % 100 == 0 and nonfinite:
                raise RuntimeError("non-finite loss")
    """
    VALID = (
        Valid(
            """
            for x, y in loader:
                if x.shape[0] != batch_size:      # host metadata, no sync
                    continue
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
                if step % 50 == 0 and not torch.isfinite(loss):
                    raise RuntimeError("non-finite loss")
            """
        ),
        Valid(
            """
            for batch in loader:
                if batch is None or len(batch) == 0:
                    continue
                out = model(batch)
                if out.requires_grad:
                    out.sum().backward()
            """
        ),
        Valid(
            """
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
                if loss.item() < best:     # reported by TT101 on the .item()
                    best = loss.item()
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            for x, y in loader:
                loss = criterion(model(x), y)
                if loss.isnan():
                    continue
                loss.backward()
                optimizer.step()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            for images, labels in train_loader:
                logits = model(images)
                loss = F.cross_entropy(logits, labels)
                assert torch.isfinite(loss), "loss exploded"
                loss.backward()
                optimizer.step()
            """,
            lines=(4,),
        ),
        Invalid(
            """
            def train_step(batch):
                out = model(batch)
                loss = out.mean()
                if loss > threshold:
                    loss = loss * 0.5
                loss.backward()

            for batch in loader:
                train_step(batch)
            """,
            lines=(4,),
        ),
        Invalid(
            """
            for x, y in loader:
                pred = model(x)
                loss = criterion(pred, y)
                loss.backward()
                optimizer.step()
                while (pred < 0).any():
                    pred = pred + 1
            """,
            lines=(6,),
        ),
    )

    def check(self, ctx: ModuleContext) -> Iterator[Report]:
        for node, region in ctx.hot.nodes((ast.If, ast.While, ast.Assert, ast.IfExp)):
            test = node.test
            if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
                # `step % 50 == 0 and not torch.isfinite(loss)`: later operands run rarely.
                evaluated = []
                for value in test.values:
                    if is_rare_guard(value, region.counter_names):
                        break
                    evaluated.append(value)
                test = ast.BoolOp(op=ast.And(), values=evaluated) if evaluated else None
            if test is None:
                continue
            culprit = _reads_tensor_value(ctx, test, tensor_names(ctx, region))
            if culprit is None:
                continue
            keyword = {ast.If: "if", ast.While: "while", ast.Assert: "assert", ast.IfExp: "conditional"}[type(node)]
            yield Report(
                node.test,
                f"`{keyword}` on a tensor value (`{ctx.segment(culprit)[:60]}`) syncs with the GPU every step; "
                "check on the device and test the flag every N steps",
            )
