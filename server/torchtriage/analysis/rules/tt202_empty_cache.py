"""TT202: ``torch.cuda.empty_cache()`` called every step."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Severity
from ..fixes import remove_statement_fix
from .base import Invalid, Report, Rule, RuleContext, Valid

_EMPTY_CACHE = frozenset({"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"})


class EmptyCacheInStep(Rule):
    code = "TT202"
    name = "empty-cache-in-step"
    severity = Severity.WARNING
    category = "memory"
    requires_cuda = True
    summary = "`torch.cuda.empty_cache()` is called on every training or eval step."
    why = """
        `empty_cache()` hands the caching allocator's free blocks back to the
        driver. The very next step has to get them again with `cudaMalloc`,
        which is slow and synchronises the device: it is exactly the cost that
        makes warm-up steps slow in a profile, paid every step. It frees no
        memory that your tensors hold, so it does not prevent out-of-memory
        errors either; "reserved much larger than allocated" is normal caching.
        It belongs between phases (after training, before evaluation), never
        in the step. For fragmentation, set
        `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` instead.
    """
    fix_description = "Remove the call from the step (call it between phases if you need to)."
    fix_applicability = Applicability.SAFE
    example_bad = """
        for x, y in loader:
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            torch.cuda.empty_cache()
    """
    example_good = """
        for x, y in loader:
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
        torch.cuda.empty_cache()  # once, before evaluation
    """
    VALID = (
        Valid(
            """
            import torch
            for epoch in range(epochs):
                for x, y in train_loader:
                    loss = criterion(model(x.cuda()), y.cuda())
                    loss.backward()
                    optimizer.step()
                torch.cuda.empty_cache()  # per epoch, after the inner loop
            """
        ),
        Valid(
            """
            import torch
            for step, (x, y) in enumerate(train_loader):
                loss = criterion(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
                if step % 1000 == 0:
                    torch.cuda.empty_cache()
            """
        ),
        Valid(
            """
            import torch
            def evaluate(model, loader):
                torch.cuda.empty_cache()  # between phases
                with torch.no_grad():
                    for x, y in loader:
                        model(x.to("cuda"))
            """
        ),
        Valid(
            """
            # CPU-only training: the rule only applies to CUDA code
            import torch
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                torch.cuda.empty_cache()
            """
        ),
        Valid(
            """
            # retry with a smaller batch after OOM: the loop runs once per attempt
            import torch
            def evaluate(args):
                for x in DataLoader(ds, batch_size=args.batch_size):
                    model(x.cuda())

            while batch_size:
                try:
                    torch.cuda.empty_cache()
                    evaluate(args)
                    break
                except RuntimeError:
                    batch_size //= 2
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            import torch
            model = model.cuda()
            for x, y in train_loader:
                loss = criterion(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
                torch.cuda.empty_cache()  # "to avoid OOM"
            """,
            lines=(7,),
            fixed="""
            import torch
            model = model.cuda()
            for x, y in train_loader:
                loss = criterion(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
            """,
        ),
        Invalid(
            """
            from torch.cuda import empty_cache
            def train_step(model, batch):
                loss = model(batch.to("cuda")).mean()
                loss.backward()
                empty_cache()

            for batch in loader:
                train_step(model, batch)
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch as th
            for step, batch in enumerate(loader):
                out = model(batch.cuda())
                out.sum().backward()
                if step % 1 == 0:
                    th.cuda.empty_cache()
            """,
            lines=(6,),
            fixed="""
            import torch as th
            for step, batch in enumerate(loader):
                out = model(batch.cuda())
                out.sum().backward()
                if step % 1 == 0:
                    pass
            """,
        ),
        Invalid(
            """
            import torch
            class LitModel(LightningModule):
                def training_step(self, batch, batch_idx):
                    loss = self.compute_loss(batch)
                    torch.cuda.empty_cache()
                    return loss
            """,
            lines=(5,),
            device="cuda",
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        for call, _region in ctx.hot.nodes(ast.Call):
            if ctx.call_qualname(call) not in _EMPTY_CACHE:
                continue
            statement = ctx.parents.get(call)
            fix = None
            if isinstance(statement, ast.Expr):
                fix = lambda stmt=statement: remove_statement_fix(  # noqa: E731
                    ctx, stmt, "Remove torch.cuda.empty_cache() from the step", Applicability.SAFE
                )
            yield Report(
                call,
                "`torch.cuda.empty_cache()` every step forces slow, syncing cudaMalloc calls "
                "on the next step: remove it, or call it once between phases",
                fix=fix,
            )
