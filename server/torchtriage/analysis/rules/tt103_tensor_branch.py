"""TT103: Python control flow on a tensor's value every step."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Severity
from ..hotloops.finder import HotRegion, is_rare_guard
from ._tensors import TensorOracle, oracle
from .base import Invalid, Report, Rule, RuleContext, Valid

# These return Python bools but compute them on the device: branching on them waits for it.
_BOOL_RESULT_FUNCTIONS = frozenset({"torch.equal", "torch.allclose", "torch.is_nonzero"})


def tensor_truth_test(ctx: RuleContext, tensors: TensorOracle, test: ast.AST, region: HotRegion) -> ast.AST | None:
    """The part of a condition whose truth Python reads from a device tensor, if any.

    ``a and b`` stops at an operand that is a rarely-true guard (``step % 50 == 0``):
    what follows it only runs on those steps.
    """
    if isinstance(test, ast.BoolOp):
        for value in test.values:
            if isinstance(test.op, ast.And) and is_rare_guard(value, region.counter_names):
                return None
            found = tensor_truth_test(ctx, tensors, value, region)
            if found is not None:
                return found
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return tensor_truth_test(ctx, tensors, test.operand, region)
    if is_bool_of(ctx, test):  # ``if bool(loss == 0):`` tests the tensor as ``if loss == 0:`` does
        return tensor_truth_test(ctx, tensors, test.args[0], region)  # type: ignore[attr-defined]
    if isinstance(test, ast.Call) and (ctx.qualname(test.func) or "") in _BOOL_RESULT_FUNCTIONS:
        if any(tensors.is_tensor(arg, region) is True for arg in test.args):
            return test
        return None
    return test if tensors.is_tensor(test, region, strict=True) is True else None


def is_bool_of(ctx: RuleContext, node: ast.AST) -> bool:
    """``bool(x)`` with the builtin."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "bool" \
        and "bool" not in ctx.aliases and len(node.args) == 1 and not node.keywords


def is_branch_test(ctx: RuleContext, node: ast.AST) -> bool:
    """``node`` is what an ``if`` / ``while`` / ``assert`` tests (through ``not`` and ``and`` / ``or``): TT103's finding."""
    parent = ctx.parents.get(node)
    while isinstance(parent, (ast.BoolOp, ast.UnaryOp)) and (not isinstance(parent, ast.UnaryOp) or isinstance(parent.op, ast.Not)):
        node, parent = parent, ctx.parents.get(parent)
    return isinstance(parent, (ast.If, ast.While, ast.Assert, ast.IfExp)) and parent.test is node


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
            # a size annotated as an int, set from a shape or from an argument that is not a tensor
            import torch

            def center_trim(tensor, reference):
                ref_size: int
                if isinstance(reference, torch.Tensor):
                    ref_size = reference.size(-1)
                else:
                    ref_size = reference
                delta = tensor.size(-1) - ref_size
                if delta < 0:
                    raise ValueError(f"tensor must be larger than reference, by {delta}")
                return tensor[..., delta // 2:tensor.size(-1) - (delta - delta // 2)] if delta else tensor

            for x, y in loader:
                x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                loss = (center_trim(model(x), y) - y).abs().mean()
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # a helper handed the step's data: what it asks of a value no tensor has (``is_file``) is no tensor
            import torch
            from pathlib import Path

            def fetch(dest, url):
                f = dest / Path(url).name
                ok = f.is_file()
                if not ok:
                    download(url, f)
                return f

            for x, folder in loader:
                fetch(folder, "weights.zip")
                loss = model(x.cuda()).sum(); loss.backward(); optimizer.step()
            """
        ),
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
        Valid(
            """
            # a model-surgery loop that happens to call a *_model helper: no tensors tested
            for name, module in model.named_children():
                has_bias = module.bias is not None
                if has_bias and name != "head":
                    convert_model(module)
                if module.affine:
                    module.reset_parameters()
            for i, (ch, stride) in enumerate(zip([64, 128], [2, 1])):
                if i > 0 and stride > 1:
                    out = model(torch.zeros(1, ch))
            """
        ),
        Valid(
            """
            import torch
            model.cuda()
            for x, y in loader:
                pred = model(x.cuda()).argmax(1)
                correct = (pred == y.cuda()).cpu()     # one copy (TT101's business)
                for i in range(len(correct)):
                    if not correct[i]:                 # host tensor: no sync
                        mistakes += 1
            """
        ),
        Valid(
            """
            class Monitor(Callback):
                def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
                    if not outputs:                    # a dict from training_step
                        return
                    loss_value = outputs["loss"].item()
                    if loss_value > self.best:         # a float by now
                        self.best = loss_value
            """
        ),
        Valid(
            """
            # checks in a helper the step calls before it moves the batch: host tensors
            from .utils import to_cuda

            class Trainer:
                def word_blank(self, x, lengths):
                    assert (x[0] == self.eos_index).sum() == lengths.size(0)
                    for i in range(lengths.size(0)):
                        assert x[lengths[i] - 1, i] == self.eos_index
                    return x, lengths

                def mt_step(self):
                    x, lengths = self.get_batch("train")
                    x, lengths = self.word_blank(x, lengths)
                    x, lengths = to_cuda(x, lengths)
                    loss = self.model(x, lengths)
                    loss.backward()
                    self.optimizer.step()

            trainer = Trainer()
            for batch in loader:
                trainer.mt_step()
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            for iter_num, data in enumerate(dataloader_train):
                loss = criterion(model(data["img"].cuda()), data["annot"].cuda())
                if bool(loss == 0):
                    continue
                loss.backward()
                optimizer.step()
            """,
            lines=(3,),
        ),
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
        Invalid(
            """
            for step, batch in enumerate(train_loader):
                outputs = model(**batch)
                loss = outputs.loss
                if not torch.isfinite(loss):
                    print("skipping step", step)
                    continue
                loss.backward()
                optimizer.step()
            """,
            lines=(4,),
        ),
        Invalid(
            """
            class LitModel(pl.LightningModule):
                def training_step(self, batch, batch_idx):
                    x, y = batch
                    logits = self(x)
                    loss = F.cross_entropy(logits, y)
                    assert (logits.abs() < 1e4).all(), "logits blew up"
                    return loss
            """,
            lines=(6,),
        ),
        Invalid(
            """
            # clip_grad_norm_ (torch's, or a wrapper's) returns the total norm as a tensor on the device
            import torch
            for x, y in loader:
                loss = criterion(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                loss.backward()
                norm = accelerator.clip_grad_norm_(model.parameters(), 1.0)
                if norm > 100:
                    skipped += 1
                optimizer.step()
            """,
            findings=(
                ("7:8-7:18", "`if` on tensor `norm > 100` syncs with the GPU every step: keep the check on the device "
                             "(`torch._assert_async`, a flag tensor tested every N steps, `torch.where`)"),
            ),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        tensors = oracle(ctx)
        for node, region in ctx.hot.nodes((ast.If, ast.While, ast.Assert, ast.IfExp)):
            culprit = tensor_truth_test(ctx, tensors, node.test, region)
            if culprit is None:
                continue
            keyword = {ast.If: "if", ast.While: "while", ast.Assert: "assert", ast.IfExp: "conditional"}[type(node)]
            yield Report(
                node.test,
                f"`{keyword}` on tensor `{ctx.segment(culprit)[:50]}` syncs with the GPU every step: keep the "
                "check on the device (`torch._assert_async`, a flag tensor tested every N steps, `torch.where`)",
            )
