"""TT102: printing or logging a tensor every step."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Fix, Severity
from ..hotloops.finder import HotRegion
from ._steplog import formatted_values, guard_statement_fix, is_log_call, step_counter
from ._tt102_text import text_and_sinks
from ._tensors import TensorOracle, oracle
from .base import Invalid, Report, Rule, RuleContext, Valid


class PrintTensorInStep(Rule):
    code = "TT102"
    name = "print-tensor-in-step"
    severity = Severity.WARNING
    category = "host_sync"
    summary = "A tensor is printed, formatted into text or logged every step, which copies it to the host and waits for the GPU."
    why = """
        Turning a tensor into text (`print(loss)`, `f"{loss:.4f}"`, `"%g" % loss`,
        `logger.info(loss)`, `pbar.set_postfix(loss=loss)`) or handing it to a
        metric sink (`writer.add_scalar(tag, loss, step)`, `wandb.log({"loss": loss})`)
        copies it to the host, so the CPU waits for every queued kernel first - a
        forced sync of roughly 1-5 ms per step - and then spends Python time
        formatting it. Logging every step also floods the console; every N steps is
        enough to follow training.
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
            # after each epoch's training loop, one sample is made and logged: once per epoch, not per step
            import torch
            for epoch in range(epochs):
                for x, y in loader:
                    loss = torch.nn.functional.mse_loss(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                with torch.no_grad():
                    sample = model(noise)
                print(f"epoch {epoch}: sample mean {sample.mean()}")
            """
        ),
        Valid(
            """
            # a warning branch: the text is built only when the check fails (the check itself syncs: TT103)
            import logging
            import torch

            def align(feat, offset):
                drift = torch.mean(torch.abs(offset))
                if drift > 50:
                    log = logging.getLogger("align")
                    log.warning(f"offset drift {drift} is larger than 50")
                return feat + offset

            for x, off in loader:
                loss = model(align(x.cuda(), off.cuda())).mean()
                loss.backward()
                optimizer.step()
            """
        ),
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
        Valid(
            """
            import math, sys
            for samples, targets in data_loader:
                loss = criterion(model(samples), targets)
                loss_value = loss.item()               # TT101 reports this read
                print("loss is", loss_value)           # a float by now: no second sync
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            class LitModel(pl.LightningModule):
                def training_step(self, batch, batch_idx):
                    loss = self.compute_loss(batch)
                    self.log("train_loss", loss)       # Lightning reduces on the device
                    return loss
            """
        ),
        Valid(
            """
            PROMPTS = ["Hello, my dog", "The capital of France"]
            for prompt in PROMPTS:
                inputs = tokenizer(prompt, return_tensors="pt")
                outputs = model.generate(inputs["input_ids"])
                text = tokenizer.decode(outputs[0], skip_special_tokens=True)
                print(f"Prompt: {prompt} -> {text}")
            """
        ),
        Valid(
            """
            import torch
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter()
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                loss.backward()
                optimizer.step()
                losses = {}
                losses[f"{prefix}_loss"] = loss.detach()  # a key built from a string: no tensor turned into text
                losses[f"{prefix}_acc"] = acc.detach()  # ``prefix`` is still the string after the line above
                name = f"step_{step}.pt"
                writer.add_scalar("train/lr", scheduler.get_last_lr()[0], step)
                if step % 100 == 0:
                    writer.add_scalar("train/loss", loss, step)
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # one print over several lines reading four tensors: four syncs, one report on each line
            import torch
            model.cuda()
            for epoch in range(epochs):
                output = model(features.cuda())
                loss_train = criterion(output[idx_train], labels[idx_train])
                loss_train.backward()
                optimizer.step()
                loss_val = criterion(output[idx_val], labels[idx_val])
                print("Epoch: {:04d}".format(epoch + 1),
                      "loss_train: {:.4f}".format(loss_train.item()),
                      "acc_train: {:.4f}".format(accuracy(output, labels).item()),
                      "loss_val: {:.4f}".format(loss_val.item()), "acc_val: {:.4f}".format(loss_val.item()))
            """,
            lines=(11, 12, 13),
        ),
        Invalid(
            """
            import torch
            best = float("inf")
            for x, y in loader:
                loss = criterion(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
                if loss < best:
                    best = loss
                    print(f"new best {loss}")
            """,
            lines=(9,),
        ),
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
        Invalid(
            """
            for i, (data, target) in enumerate(train_loader):
                output = model(data)
                loss = F.nll_loss(output, target)
                loss.backward()
                optimizer.step()
                print("Epoch[{}]({}): Loss: {:.4f}".format(epoch, i, loss.item()))
                accelerator.print(f"acc {float((output.argmax(1) == target).float().mean()):.3f}")
            """,
            lines=(6, 7),
            fixed="""
            for i, (data, target) in enumerate(train_loader):
                output = model(data)
                loss = F.nll_loss(output, target)
                loss.backward()
                optimizer.step()
                if i % 100 == 0:
                    print("Epoch[{}]({}): Loss: {:.4f}".format(epoch, i, loss.item()))
                if i % 100 == 0:
                    accelerator.print(f"acc {float((output.argmax(1) == target).float().mean()):.3f}")
            """,
        ),
        Invalid(
            """
            def train_step(model, batch, step):
                loss = model(batch).mean()
                loss.backward()
                tqdm.write(f"step {step} loss {loss}")

            for step, batch in enumerate(loader):
                train_step(model, batch, step)
            """,
            lines=(4,),
            fixed="""
            def train_step(model, batch, step):
                loss = model(batch).mean()
                loss.backward()
                if step % 100 == 0:
                    tqdm.write(f"step {step} loss {loss}")

            for step, batch in enumerate(loader):
                train_step(model, batch, step)
            """,
        ),
        Invalid(
            """
            import torch
            import wandb
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter()
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                loss.backward()
                optimizer.step()
                status = f"loss {loss:.4f}"
                legacy = "loss %g" % loss
                writer.add_scalar("train/loss", loss, step)
                wandb.log({"loss": loss})
            """,
            findings=(
                ("10:22-10:26", "an f-string of `loss` every step reads the tensor on the host (a GPU->CPU sync): build the "
                                "text every N steps (`if step % 100 == 0:`)"),
                ("11:26-11:30", "`%` formatting of `loss` every step reads the tensor on the host (a GPU->CPU sync): build the "
                                "text every N steps (`if step % 100 == 0:`)"),
                ("12:37-12:41", "`writer.add_scalar` of `loss` every step reads the tensor on the host (a GPU->CPU sync): log "
                                "it every N steps (`if step % 100 == 0:`)"),
                ("13:24-13:28", "`wandb.log` of `loss` every step reads the tensor on the host (a GPU->CPU sync): log it every "
                                "N steps (`if step % 100 == 0:`)"),
            ),
        ),
        Invalid(
            """
            import torch
            for x, y in loader:
                loss = criterion(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                status = f"grad norm {norm:.2f}"
            """,
            findings=(
                ("7:27-7:31", "an f-string of `norm` every step reads the tensor on the host (a GPU->CPU sync): "
                              "build the text every N steps (`if step % 100 == 0:`)"),
            ),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        tensors = oracle(ctx)
        for call, region in ctx.hot.nodes(ast.Call):
            if not is_log_call(ctx, call):
                continue
            read = [v for v in formatted_values(call) if _reads_device_value(tensors, v, region)]
            if not read or _in_a_warning_branch(ctx, tensors, call, region):
                continue
            what = ctx.dotted(call.func) or "log call"
            # A call over several lines is reported where each tensor is read (one sync each, one report per
            # line), not at `print(`; the fix, which guards the whole call, comes with the first.
            over_lines = call.lineno != call.end_lineno
            lines: dict[int, ast.expr] = {}
            for value in read if over_lines else read[:1]:
                lines.setdefault(value.lineno, value)
            for index, shown in enumerate(lines.values()):
                yield Report(
                    shown if over_lines else call,
                    f"`{what}` of `{ctx.segment(shown)[:40]}` every step forces a GPU->CPU sync: "
                    "log every N steps (`if step % 100 == 0:`)",
                    fix=(lambda call=call, region=region: _fix(ctx, call, region)) if index == 0 else None,
                )
        for shown, where, what, _ in text_and_sinks(ctx, tensors):
            yield Report(
                where,
                f"{what} of `{ctx.segment(shown)[:40]}` every step reads the tensor on the host (a GPU->CPU sync): "
                + ("log it every N steps (`if step % 100 == 0:`)" if what.startswith("`") and "format" not in what
                   and "%" not in what else "build the text every N steps (`if step % 100 == 0:`)"),
            )


def _in_a_warning_branch(ctx: RuleContext, tensors: TensorOracle, call: ast.Call, region: HotRegion) -> bool:
    """The log call is the whole work of a branch taken when a tensor check fails (``if drift > 50:
    logger.warning(f"... {drift}")``): a warning path, not every step's work; the check's own read is
    TT103's."""
    statement = ctx.parents.get(call)
    branch = ctx.parents.get(statement) if statement is not None else None
    if not (isinstance(statement, ast.Expr) and isinstance(branch, ast.If) and statement in branch.body):
        return False
    if not any(_reads_device_value(tensors, node, region) for node in ast.walk(branch.test) if isinstance(node, ast.expr)):
        return False
    return all(
        isinstance(s, (ast.Raise, ast.Pass))
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and is_log_call(ctx, s.value))
        or (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call))  # ``logger = get_root_logger()``
        for s in branch.body
    )


def _reads_device_value(tensors: TensorOracle, value: ast.AST, region: HotRegion) -> bool:
    """A formatted value that is a device tensor or reads one (``loss.item()``, ``float(acc)``)."""
    if tensors.is_tensor(value, region) is True:
        return True
    return any(tensors.sync_kind(node, region) for node in ast.walk(value) if isinstance(node, ast.Call))


def _fix(ctx: RuleContext, call: ast.Call, region: HotRegion) -> Fix | None:
    statement = ctx.enclosing_statement(call)
    counter = step_counter(ctx, region)
    if counter is None or not isinstance(statement, ast.Expr) or statement.value is not call:
        return None
    return guard_statement_fix(ctx, statement, counter, "log")
