"""TT201: a step's loss/output tensor is accumulated with its autograd graph."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Fix, Severity
from ..fixes import method_call_fix
from ..hotloops.finder import HotRegion
from ._tt201_accumulate import Site, accumulation_site, backpropagated_later, grad_disabled_file
from ._tt201_graph import GraphTracker, carrier, carrying_parts
from ._steps import target_key
from ._tt201_steps import rebinds_in_region, runs_without_grad
from .base import Invalid, Report, Rule, RuleContext, Valid


class GraphKeptAcrossSteps(Rule):
    code = "TT201"
    name = "graph-kept-across-steps"
    severity = Severity.WARNING
    category = "memory"
    summary = "A loss or output tensor of the step is accumulated (`total += loss`, `losses.append(loss)`) with its autograd graph."
    why = """
        A tensor produced by the forward pass remembers how it was computed.
        Adding it to a running total, or appending it to a list that outlives
        the step, keeps that history alive: `total += loss` chains every
        step's graph onto the next, and `outputs.append(logits)` in a loop
        that runs with gradients on keeps each batch's saved activations. Peak
        memory then grows step over step, the signature of retained graphs in
        a memory profile, until the run slows down or dies out of memory.
        `.detach()` keeps the value on the device with no sync; call `.item()`
        only when you actually log.
    """
    fix_description = "Accumulate `value.detach()` instead of the value (or `.item()` when you log it)."
    fix_applicability = Applicability.SAFE
    example_bad = """
        total_loss = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total_loss += loss
    """
    example_good = """
        total_loss = torch.zeros((), device=device)
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total_loss += loss.detach()
        print(total_loss.item() / len(loader))
    """
    VALID = (
        Valid(
            """
            # the loss read back to a number after its backward: what is summed is NumPy, no graph
            for x, y in loader:
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                loss = loss.detach().cpu().numpy()
                loss_accum += loss
            """,
        ),
        Valid(
            """
            total_loss = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                total_loss += loss.item()
            """
        ),
        Valid(
            """
            # loss recomputed every step: `loss = loss + reg` and `loss += aux` rebuild it
            for x, y in loader:
                out, aux_loss = model(x)
                loss = criterion(out, y)
                loss = loss + 1e-4 * reg_term
                loss += 0.1 * aux_loss
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            @torch.no_grad()
            def evaluate(model, loader):
                outputs = []
                for x, y in loader:
                    logits = model(x)
                    outputs.append(logits)
                return torch.cat(outputs)
            """
        ),
        Valid(
            """
            model.eval()
            preds = []
            with torch.inference_mode():
                for batch in val_loader:
                    preds.append(model(batch["x"]))
            """
        ),
        Valid(
            """
            running_loss = 0.0
            for step, (x, y) in enumerate(train_loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step % log_every == 0:
                    history.append(loss)   # rare: only on logging steps
            """
        ),
        Valid(
            """
            for epoch in range(epochs):
                epoch_losses = []
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    epoch_losses.append(loss.detach())
                history.append(torch.stack(epoch_losses).mean())  # per epoch, after the loop
            """
        ),
        Valid(
            """
            class Lit(LightningModule):
                def validation_step(self, batch, batch_idx):
                    logits = self(batch[0])
                    self.val_outputs.append(logits)   # Lightning runs this under no_grad
            """
        ),
        Valid(
            """
            all_preds = []
            for x, y in loader:
                logits = model(x)
                loss = criterion(logits, y)
                loss.backward()
                optimizer.step()
                all_preds.append(logits.argmax(dim=1))
                correct += (logits.argmax(1) == y).sum()
            """
        ),
        Valid(
            """
            for x, y in loader:
                with torch.no_grad():
                    teacher_logits = teacher(x)
                cache.append(teacher_logits)
                loss = criterion(student(x), teacher_logits)
                loss.backward()
            """
        ),
        Valid(
            """
            # graphs kept on purpose: backpropagated together after the loop
            losses = []
            for x, y in loader:
                with accelerator.no_sync(model):
                    loss = F.mse_loss(model(x), y)
                    losses.append(loss)
            for i in range(len(losses)):
                loss = losses[i]
                accelerator.backward(loss)
            """
        ),
        Valid(
            """
            flags = []
            for batch in loader:
                flags.append(accelerator.sync_gradients)
                outputs = model(**batch)
                accelerator.backward(outputs.loss)
                optimizer.step()
            """
        ),
        Valid(
            """
            # a project's wrapper of inference_mode as the decorator: autograd is off, no graph is kept
            import torch
            from utils.torch_utils import smart_inference_mode

            @smart_inference_mode()
            def run(model, loader, criterion):
                loss = 0
                for images, labels in loader:
                    y = model(images.cuda(non_blocking=True))
                    loss += criterion(y, labels.cuda(non_blocking=True))
                return loss / len(loader)
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # the step's loss comes from a method the rule cannot see into, but backward runs on it: it has a graph
            for users, items in batches:
                self.optimizer.zero_grad()
                batch_loss = self.process_one_batch(users, items)
                batch_loss.backward()
                self.optimizer.step()
                epoch_loss += batch_loss
            """,
            lines=(7,),
        ),
        Invalid(
            """
            total_loss = 0
            for x, y in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                total_loss += loss  # for the epoch average
            """,
            lines=(7,),
            fixed="""
            total_loss = 0
            for x, y in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                total_loss += loss.detach()  # for the epoch average
            """,
        ),
        Invalid(
            """
            def train_epoch(model, loader, optimizer):
                losses, outputs = [], []
                running = 0.0
                for inputs, labels in loader:
                    logits = model(inputs)
                    loss = F.cross_entropy(logits, labels)
                    loss.backward()
                    optimizer.step()
                    losses.append(loss)
                    outputs.append(logits)
                    running = running + loss * inputs.size(0)
                return losses
            """,
            lines=(9, 10, 11),
            fixed="""
            def train_epoch(model, loader, optimizer):
                losses, outputs = [], []
                running = 0.0
                for inputs, labels in loader:
                    logits = model(inputs)
                    loss = F.cross_entropy(logits, labels)
                    loss.backward()
                    optimizer.step()
                    losses.append(loss.detach())
                    outputs.append(logits.detach())
                    running = running + (loss * inputs.size(0)).detach()
                return losses
            """,
        ),
        Invalid(
            """
            class Lit(LightningModule):
                def training_step(self, batch, batch_idx):
                    x, y = batch
                    loss = F.mse_loss(self(x), y)
                    self.train_losses.append(loss)
                    return loss
            """,
            lines=(5,),
        ),
        Invalid(
            """
            # `.to("cpu")` copies the values but keeps the graph
            reference_logits = []
            for batch in train_dataloader:
                outputs = model(**batch)
                reference_logits.append(outputs.logits.to("cpu"))
                accelerator.backward(outputs.loss)
                optimizer.step()
            """,
            lines=(5,),
        ),
        Invalid(
            """
            # eval loop WITHOUT no_grad: every batch's activations are kept
            model.eval()
            predictions = {}
            for i, (x, _) in enumerate(test_loader):
                out = model(x)
                predictions[i] = out
            """,
            lines=(6,),
        ),
        Invalid(
            """
            def train_step(model, batch, optimizer):
                outputs = model(**batch)
                outputs.loss.backward()
                optimizer.step()
                return outputs.loss

            epoch_loss = 0
            for step, batch in enumerate(train_dataloader):
                loss = train_step(model, batch, optimizer)
                epoch_loss += loss
                if step % 1 == 0:
                    history["loss"].append((step, loss))
            """,
            lines=(10, 12),
            fixed="""
            def train_step(model, batch, optimizer):
                outputs = model(**batch)
                outputs.loss.backward()
                optimizer.step()
                return outputs.loss

            epoch_loss = 0
            for step, batch in enumerate(train_dataloader):
                loss = train_step(model, batch, optimizer)
                epoch_loss += loss.detach()
                if step % 1 == 0:
                    history["loss"].append((step, loss.detach()))
            """,
        ),
        Invalid(
            """
            import torch
            for epoch in range(10):
                for x, y in train_loader:
                    loss = loss_func(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                    loss.backward()
                    opt.step()
                val_loss = 0.0
                for x, y in val_loader:  # evaluation with autograd on: each batch's loss keeps its graph
                    out = model(x.cuda(non_blocking=True))
                    val_loss += loss_func(out, y.cuda(non_blocking=True))
            """,
            findings=(
                ("10:9-10:62", "`val_loss += loss_func(out, y.cuda(non_blocking=True))` keeps the autograd graph of every step "
                               "alive: accumulate `loss_func(out, y.cuda(non_blocking=True)).detach()` (or `.item()` when logging)"),
            ),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        if grad_disabled_file(ctx):
            return
        tracker = GraphTracker(ctx)
        for node, region in ctx.hot.nodes((ast.AugAssign, ast.Assign, ast.Expr)):
            site = accumulation_site(ctx, node)
            if site is None:
                continue
            graph = tracker.names(region)
            if not graph:
                continue
            made_here = not carrier(site.value, graph) and tracker.produces_from(site.value, graph)
            if not made_here and not carrier(site.value, graph):
                continue  # ``val_loss += loss_func(out, y)``: a loss made from the step's outputs right there carries too
            if not self._outlives_step(ctx, site, region, graph):
                continue
            if runs_without_grad(ctx, site.statement, region) or backpropagated_later(ctx, site):
                continue
            parts = [site.value] if made_here else carrying_parts(site.value, graph)
            yield Report(
                site.statement,
                f"`{_short(ctx, site.statement)}` keeps the autograd graph of every step alive: "
                f"accumulate `{_short(ctx, parts[0])}.detach()` (or `.item()` when logging)",
                fix=lambda parts=parts: _detach_fix(ctx, parts),
            )

    @staticmethod
    def _outlives_step(ctx: RuleContext, site: Site, region: HotRegion, graph: set[str]) -> bool:
        key = target_key(site.accumulator, ctx)
        if key is None or key in graph:
            return False  # ``loss += aux_loss``: the step's own tensor, rebuilt every step
        return not rebinds_in_region(ctx, region, key, site.statement)


def _short(ctx: RuleContext, node: ast.AST) -> str:
    text = " ".join(ctx.segment(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _detach_fix(ctx: RuleContext, parts: list[ast.expr]) -> Fix:
    fixes = [method_call_fix(ctx, part, "detach", "Detach", Applicability.SAFE) for part in parts]
    edits = tuple(edit for fix in fixes for edit in fix.edits)
    title = "Accumulate a detached tensor" if len(parts) == 1 else "Detach the accumulated tensors"
    return Fix(title, Applicability.SAFE, edits)
