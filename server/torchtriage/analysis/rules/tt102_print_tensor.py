"""TT102: printing or logging a tensor every step."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Severity
from ..context import ModuleContext
from ._helpers import method_name
from ._tensors import LOG_CALL, guard_statement_fix, is_tensor_expr, step_counter, tensor_names
from .base import Invalid, Report, Rule, Valid


def _formatted_values(call: ast.Call) -> list[ast.AST]:
    """The values a print/log call turns into text (f-string parts included)."""
    values: list[ast.AST] = []
    for argument in [*call.args, *(k.value for k in call.keywords if k.arg not in ("file", "end", "sep", "flush"))]:
        if isinstance(argument, ast.JoinedStr):
            values.extend(part.value for part in argument.values if isinstance(part, ast.FormattedValue))
        elif isinstance(argument, ast.Dict):
            values.extend(v for v in argument.values if v is not None)
        elif isinstance(argument, ast.Call) and method_name(argument) == "format":
            values.extend(argument.args)
        elif isinstance(argument, ast.BinOp) and isinstance(argument.op, ast.Mod):
            right = argument.right
            values.extend(right.elts if isinstance(right, ast.Tuple) else [right])
        else:
            values.append(argument)
    return values


class PrintTensorInStep(Rule):
    code = "TT102"
    name = "print-tensor-in-step"
    severity = Severity.WARNING
    category = "host_sync"
    summary = "A tensor is printed or logged every step, which copies it to the host and waits for the GPU."
    why = """
        Turning a tensor into text (`print(loss)`, `f"{loss}"`, `logger.info(loss)`,
        `pbar.set_postfix(loss=loss)`) copies it to the host, so the CPU waits
        for every queued kernel first - a forced sync of roughly 1-5 ms per step
        - and then spends Python time formatting it. Logging every step also
        floods the console; every N steps is enough to follow training.
    """
    fix_description = "Log every N steps (`if step % 100 == 0:`), or accumulate on the device and log once per epoch."
    fix_applicability = Applicability.UNSAFE
    example_bad = """
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            ...
            print(f"step {step}: loss {loss}")
    """
    example_good = """
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            ...
            if step % 100 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
    """
    VALID = (
        Valid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
                if step % args.log_interval == 0:
                    print(f"step {step} loss {loss}")
            """
        ),
        Valid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
                print(f"step {step} of {len(loader)}")   # no tensor
                logger.debug("lr=%s", scheduler.get_last_lr())
            """
        ),
        Valid(
            """
            for epoch in range(10):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward(); optimizer.step()
                print("epoch", epoch, "loss", loss)   # per epoch
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                print(f"step {step}: loss {loss}")
            """,
            lines=(5,),
            fixed="""
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step % 100 == 0:
                    print(f"step {step}: loss {loss}")
            """,
        ),
        Invalid(
            """
            import logging
            logger = logging.getLogger(__name__)
            for batch in train_loader:
                outputs = model(batch)
                loss = outputs.loss
                loss.backward()
                optimizer.step()
                logger.info("loss %s", loss)
            """,
            lines=(8,),
        ),
        Invalid(
            """
            pbar = tqdm(loader)
            for images, labels in pbar:
                logits = model(images)
                loss = criterion(logits, labels)
                loss.backward()
                optimizer.step()
                pbar.set_postfix(loss=loss)
            """,
            lines=(7,),
        ),
        Invalid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
                if step % 1 == 0:
                    print("loss", loss)
            """,
            lines=(5,),
        ),
    )

    def check(self, ctx: ModuleContext) -> Iterator[Report]:
        for call, region in ctx.hot.nodes(ast.Call):
            name = ctx.dotted(call.func) or ""
            if not LOG_CALL.match(name):
                continue
            known = tensor_names(ctx, region)
            tensors = [
                value for value in _formatted_values(call)
                if is_tensor_expr(ctx, value, known)
                and not any(method_name(n) in ("item", "tolist") for n in ast.walk(value))
            ]
            if not tensors:
                continue
            shown = ctx.segment(tensors[0]) or "a tensor"
            yield Report(
                call,
                f"`{name}` formats tensor `{shown}` every step (forced host sync): log every N steps "
                "or use `.item()` on a value accumulated on the device",
                fix=lambda call=call, region=region: self._fix(ctx, call, region),
            )

    @staticmethod
    def _fix(ctx: ModuleContext, call: ast.Call, region) -> object:  # type: ignore[no-untyped-def]
        statement = ctx.enclosing_statement(call)
        counter = step_counter(ctx, region)
        if counter is None or not isinstance(statement, ast.Expr) or statement.value is not call:
            return None
        return guard_statement_fix(ctx, statement, counter, 100, f"Only log every 100 steps (`{counter} % 100`)")
