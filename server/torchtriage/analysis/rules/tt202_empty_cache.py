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
        Valid(
            """
            # a fallback for very long clips only: the flag is a size threshold the step computes
            import torch

            def run_clip(model, frames):
                feats = []
                offload = frames.size(1) > 100
                for i in range(frames.size(1)):
                    feats.append(model(frames[:, i]))
                    if offload:
                        feats[-1] = feats[-1].cpu()
                        torch.cuda.empty_cache()
                return torch.stack(feats, 1)

            model = Net().cuda()
            for frames in loader:
                loss = run_clip(model, frames.cuda()).mean()
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # the same, with the flag on the object: one method sets it, another reads it
            import torch

            class ClipTrainer:
                def step(self, frames):
                    self.offload = True if frames.size(1) > self.offload_after else False
                    loss = self.encode(frames).mean()
                    loss.backward()
                    self.optimizer.step()

                def encode(self, frames):
                    feats = []
                    for i in range(frames.size(1)):
                        feats.append(self.model(frames[:, i]))
                        if self.offload:
                            torch.cuda.empty_cache()
                    return torch.stack(feats, 1)

            trainer = ClipTrainer()
            for frames in loader:
                trainer.step(frames.cuda())
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

            def run_clip(model, frames, low_memory):
                feats = []
                for i in range(frames.size(1)):
                    feats.append(model(frames[:, i]))
                    if low_memory:
                        torch.cuda.empty_cache()
                return torch.stack(feats, 1)

            model = Net().cuda()
            for frames in loader:
                loss = run_clip(model, frames.cuda(), args.low_memory).mean()
                loss.backward()
                optimizer.step()
            """,
            lines=(8,),
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
            if ctx.call_qualname(call) not in _EMPTY_CACHE or _under_a_flag(ctx, call):
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


def _under_a_flag(ctx: RuleContext, call: ast.Call) -> bool:
    """The call runs only on a fallback path for large inputs: under an ``if`` on a flag set from a
    comparison by its function (``offload = frames.size(1) > 100``) or, for ``self.cpu_cache``, by a
    method of its class (``self.cpu_cache = len(lqs) > self.cpu_cache_length`` in ``forward``), not
    on every step."""
    function = ctx.enclosing_function(call)
    if function is None:
        return False
    owner = ctx.enclosing_class(function)
    for ancestor in ctx.ancestors(call):
        if ancestor is function:
            return False
        if isinstance(ancestor, ast.If):
            test = ancestor.test.operand if isinstance(ancestor.test, ast.UnaryOp) and isinstance(ancestor.test.op, ast.Not) \
                else ancestor.test
            on_self = isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self"
            if _set_by_comparison(test, owner if on_self and owner is not None else function):
                return True
    return False


def _set_by_comparison(test: ast.expr, scope: ast.AST) -> bool:
    """``test`` is a name or attribute that ``scope`` assigns from a comparison (or ``True if ... else False``)."""
    if not isinstance(test, (ast.Name, ast.Attribute)):
        return False
    flag = ast.unparse(test)
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and any(ast.unparse(t) == flag for t in node.targets):
            value = node.value.test if isinstance(node.value, ast.IfExp) else node.value
            if isinstance(value, ast.Compare):
                return True
    return False
