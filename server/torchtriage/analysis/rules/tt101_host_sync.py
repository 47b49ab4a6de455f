"""TT101: reading a tensor's value on the host every step (``.item()``, ``.cpu()``...)."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Severity
from ..context import ModuleContext
from ..fixes import replace_expression, call_method
from ._helpers import method_name
from ._tensors import LOG_CALL, guard_statement_fix, is_tensor_expr, step_counter, tensor_names
from .base import Invalid, Report, Rule, Valid

SYNC_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
SYNC_BUILTINS = frozenset({"float", "int", "bool"})
_MODULE_RECEIVERS = ("model", "net", "module", "self")


def _outermost_sync(call: ast.Call, ctx: ModuleContext) -> bool:
    """Only report the end of a chain: ``x.detach().cpu().numpy()`` is one sync."""
    parent = ctx.parents.get(call)
    if isinstance(parent, ast.Attribute) and parent.value is call:
        grand = ctx.parents.get(parent)
        if isinstance(grand, ast.Call) and grand.func is parent and parent.attr in SYNC_METHODS:
            return False
    return True


class HostSyncInStep(Rule):
    code = "TT101"
    name = "host-sync-in-step"
    severity = Severity.WARNING
    category = "host_sync"
    summary = "A tensor value is read on the host every step (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `float(t)`)."
    why = """
        Reading a tensor's value on the CPU forces the host to wait until every
        queued kernel has finished: the GPU pipeline drains and the next step
        cannot be queued ahead. Practitioners measure roughly 1-5 ms lost per
        forced sync, every step; in a profile it shows as `aten::item` /
        `aten::_local_scalar_dense` and `cudaStreamSynchronize` with the GPU
        idle behind it. On CPU-only runs the cost is smaller but the pattern
        still blocks any future move to an accelerator.
    """
    fix_description = (
        "Keep running sums on the device (`total += loss.detach()`) and read them once after the "
        "loop, or read values only every N steps (`if step % 100 == 0:`)."
    )
    fix_applicability = Applicability.UNSAFE
    example_bad = """
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward(); optimizer.step()
            running_loss += loss.item()
    """
    example_good = """
        running_loss = torch.zeros((), device=device)
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward(); optimizer.step()
            running_loss += loss.detach()
        print(running_loss.item() / len(loader))  # one sync per epoch
    """
    VALID = (
        Valid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step % 100 == 0:
                    print(f"step {step} loss {loss.item():.4f}")
            """
        ),
        Valid(
            """
            for epoch in range(epochs):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                print("epoch loss", loss.item())   # once per epoch
            """
        ),
        Valid(
            """
            for x, y in loader:
                lr = float(args.lr)          # not a tensor
                n = int(len(x))
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            for i, (x, y) in enumerate(train_loader):
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
                if i == len(train_loader) - 1:
                    last = loss.item()
            model.cpu()
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            running_loss = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
            """,
            lines=(6,),
            fixed="""
            running_loss = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                running_loss += loss.detach()
            """,
        ),
        Invalid(
            """
            for batch_idx, (data, target) in enumerate(train_loader):
                output = model(data)
                loss = F.nll_loss(output, target)
                loss.backward()
                optimizer.step()
                preds = output.argmax(dim=1).cpu().numpy()
                acc = float((output.argmax(1) == target).float().mean())
            """,
            lines=(6, 7),
        ),
        Invalid(
            """
            def train_step(model, batch):
                loss = model(batch).mean()
                loss.backward()
                return loss.item()

            for batch in loader:
                history.append(train_step(model, batch))
            """,
            lines=(4,),
        ),
        Invalid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                writer.add_scalar("train/loss", loss.item(), step)
            """,
            lines=(5,),
            fixed="""
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step % 100 == 0:
                    writer.add_scalar("train/loss", loss.item(), step)
            """,
        ),
    )

    def check(self, ctx: ModuleContext) -> Iterator[Report]:
        for call, region in ctx.hot.nodes(ast.Call):
            method = method_name(call)
            if method in SYNC_METHODS and isinstance(call.func, ast.Attribute):
                receiver = call.func.value
                if method in ("cpu", "numpy", "tolist") and not is_tensor_expr(ctx, receiver, tensor_names(ctx, region)):
                    continue
                if method == "cpu" and isinstance(receiver, ast.Name) and receiver.id in _MODULE_RECEIVERS:
                    continue
                if not _outermost_sync(call, ctx):
                    continue
                what = f"`.{method}()`"
            elif isinstance(call.func, ast.Name) and call.func.id in SYNC_BUILTINS and len(call.args) == 1:
                argument = call.args[0]
                if not is_tensor_expr(ctx, argument, tensor_names(ctx, region)):
                    continue
                if any(method_name(n) in SYNC_METHODS for n in ast.walk(argument)):
                    continue  # float(loss.item()) is reported on the .item()
                what = f"`{call.func.id}(tensor)`"
            else:
                continue
            yield Report(
                call,
                f"{what} every step forces a host-device sync; keep values on the device "
                "and read them once after the loop or every N steps",
                fix=lambda call=call, region=region: self._fix(ctx, call, region),
            )

    def _fix(self, ctx: ModuleContext, call: ast.Call, region) -> object:  # type: ignore[no-untyped-def]
        statement = ctx.enclosing_statement(call)
        if (
            isinstance(statement, ast.AugAssign)
            and statement.value is call
            and method_name(call) == "item"
            and isinstance(call.func, ast.Attribute)
        ):
            return replace_expression(
                ctx,
                call,
                lambda expression: call_method(expression.func.value, "detach"),  # type: ignore[attr-defined]
                "Accumulate on the device with .detach() (read once after the loop)",
                Applicability.UNSAFE,
            )
        counter = step_counter(ctx, region)
        if (
            counter
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and LOG_CALL.match(ctx.dotted(statement.value.func) or "")
            or (counter and isinstance(statement, ast.Expr) and method_name(statement.value) in ("add_scalar", "log", "add_scalars"))
        ):
            return guard_statement_fix(ctx, statement, counter, 100, f"Only log every 100 steps (`{counter} % 100`)")
        return None
