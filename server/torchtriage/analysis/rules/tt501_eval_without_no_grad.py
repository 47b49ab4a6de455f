"""TT501: an evaluation loop that runs the model with autograd still recording."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from ...findings import Applicability, Fix, Severity
from ..hotloops.finder import HotLoops, HotRegion
from ..hotloops.step_markers import is_model_call, unwrap_iterable
from ..incremental.walks import subtree
from ..file_kinds import is_test_file
from ._tt501_grad_mode import NEEDS_GRAD, disables_grad_inside, grad_disabled
from ._tt501_self_model import is_self_model_call
from ._tt501_step_eval import step_eval_calls
from ._loaders import regions_reached
from ._spans import loop_header
from ._tt501_wrap import wrap_in_with_fix
from .base import Invalid, Report, Rule, RuleContext, Valid

_EVAL_WORD = re.compile(r"(^|_)(val|valid|validate|validation|eval|evaluate|evaluation|test|dev|predict|"
                        r"prediction|infer|inference|score|accuracy)(_|$|\d)", re.I)


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _looks_like_evaluation(ctx: RuleContext, loop: ast.AST) -> bool:
    """An eval/val/test loader, an evaluate()-style function, or ``model.eval()`` before the loop."""
    if isinstance(loop, (ast.For, ast.AsyncFor)) and _EVAL_WORD.search(_name(unwrap_iterable(loop.iter))):
        return True
    function = ctx.enclosing_function(loop)
    if function is None:
        return False
    if function.name.startswith("test_") and is_test_file(ctx.path, ctx.source):
        return False  # a unit test, not an evaluation loop
    if _EVAL_WORD.search(function.name):
        return True
    return any(
        isinstance(node, ast.Call) and _name(node.func) == "eval" and not node.args
        and node.lineno <= loop.lineno
        for node in subtree(function)
    )


def _needs_gradients(ctx: RuleContext, regions: list[HotRegion]) -> bool:
    """Training, or computing input gradients (saliency, adversarial attacks), in the loop."""
    if any(region.trains for region in regions):
        return True
    for region in regions:
        for node in subtree(region.node):
            if isinstance(node, ast.Call) and _name(node.func) in NEEDS_GRAD | {"backward", "train"}:
                return True
            if isinstance(node, ast.keyword) and node.arg == "requires_grad":
                return True
    return False


def _grad_tracked_model_calls(ctx: RuleContext, regions: list[HotRegion], hot: HotLoops) -> list[ast.Call]:
    calls = []
    for region in regions:
        for node in subtree(region.node):
            if (
                (is_model_call(node, region.batch_names) or is_self_model_call(ctx, node, region.batch_names))
                and hot.region_of(node) is region
                and _name(node.func) != "generate"  # HF generate() turns autograd off itself
            ):
                if not grad_disabled(ctx, node):
                    calls.append(node)  # type: ignore[arg-type]
    return calls


def _frozen_model(ctx: RuleContext) -> bool:
    """``model.requires_grad_(False)`` / ``p.requires_grad = False``: nothing to record."""
    if "requires_grad" not in ctx.source:
        return False  # (both spell it out)
    for node in ctx.nodes_of((ast.Call, ast.Assign)):
        if isinstance(node, ast.Call) and _name(node.func) == "requires_grad_":
            if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False:
                return True
        if isinstance(node, ast.Assign) and any(_name(t) == "requires_grad" for t in node.targets):
            return True
    return False


def _no_grad_manager(ctx: RuleContext) -> str | None:
    """How this module spells ``torch.no_grad()``, or None when it has no handle on it."""
    for local, qualified in sorted(ctx.aliases.items()):
        if qualified == "torch":
            return f"{local}.no_grad()"
    for local, qualified in sorted(ctx.aliases.items()):
        if qualified == "torch.no_grad":
            return f"{local}()"
    return None


class EvalWithoutNoGrad(Rule):
    code = "TT501"
    name = "eval-without-no-grad"
    severity = Severity.WARNING
    category = "compute"
    requires_cuda = False
    summary = "An evaluation loop calls the model without `torch.no_grad()` / `torch.inference_mode()`."
    why = """
        Outside `no_grad`, every forward pass records the autograd graph and keeps
        each layer's activations alive until the outputs are dropped, although
        no backward pass will ever use them. Evaluation then needs close to
        training-time memory (forcing smaller eval batches) and spends time on
        graph bookkeeping; outputs that are kept across steps (`preds.append(out)`)
        also keep their graphs, so memory grows step over step.
    """
    fix_description = """
        Wrap the loop in `with torch.no_grad():` (or decorate the evaluation
        function with `@torch.inference_mode()`). Unsafe: code that later needs
        gradients of these outputs would break.
    """
    fix_applicability = Applicability.UNSAFE
    example_bad = """
        model.eval()
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum()
    """
    example_good = """
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum()
    """
    VALID = (
        Valid(
            """
            # autograd is off around the validation loop, so in the helper it calls too (the helper also trains)
            import torch

            class Experiment:
                def _predict(self, x):
                    return self.model(x)

                def vali(self, loader):
                    self.model.eval()
                    with torch.no_grad():
                        for x, y in loader:
                            out = self._predict(x.cuda(non_blocking=True))
                            self.metric.update(out, y)

                def train(self, loader, val_loader):
                    for epoch in range(10):
                        for x, y in loader:
                            loss = self._predict(x.cuda(non_blocking=True)).sum()
                            loss.backward()
                            self.optimizer.step()
                        self.vali(val_loader)
            """
        ),
        Valid(
            """
            # torch 0.3's no-grad: a volatile Variable
            from torch.autograd import Variable
            model.eval()
            for inputs, targets in test_loader:
                inputs = Variable(inputs.cuda(), volatile=True)
                outputs = model(inputs)
            """
        ),
        Valid(
            """
            # eval mode to freeze batch norm: the step still trains through the output
            def train_step(x, y):
                model.eval()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()

            for x, y in loader:
                train_step(x, y)
            """
        ),
        Valid(
            """
            import torch

            def sample(step):
                G.eval()
                with torch.no_grad():
                    fake = G(z)
                save(fake, step)
                G.train()

            for i, (x, _) in enumerate(loader):
                loss = criterion(D(G(z)), ones)
                loss.backward()
                opt.step()
                if i % 500 == 0:
                    sample(i)
            """
        ),
        Valid(
            """
            import torch

            def test(model, device, test_loader):
                model.eval()
                with torch.no_grad():
                    for data, target in test_loader:
                        output = model(data.to(device))
            """
        ),
        Valid(
            """
            import torch

            @torch.inference_mode()
            def evaluate(model, loader):
                model.eval()
                return [model(x).argmax(-1) for x, _ in loader] + [model(x) for x in loader]
            """
        ),
        Valid(
            """
            import torch

            def validate(model, val_loader):
                for images, labels in val_loader:
                    logits = model(images)

            with torch.no_grad():
                validate(model, val_loader)
            """
        ),
        Valid(
            """
            # a training loop: gradients are wanted
            for x, y in train_loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # adversarial evaluation needs input gradients
            import torch
            model.eval()
            for x, y in test_loader:
                x.requires_grad_(True)
                loss = criterion(model(x), y)
                grad, = torch.autograd.grad(loss, x)
            """
        ),
        Valid(
            """
            import torch
            torch.set_grad_enabled(False)
            model.eval()
            for batch in eval_dataloader:
                preds = model(batch)
            """
        ),
        Valid(
            """
            import torch
            from contextlib import nullcontext
            ctx = torch.no_grad() if args.no_grad else nullcontext()
            model.eval()
            with ctx:
                for x, y in val_loader:
                    out = model(x)
            """
        ),
        Valid(
            """
            # a helper object's evaluation: ``self.scorer`` is no torch.nn layer the class built
            import torch.nn as nn

            class Evaluator:
                def __init__(self, scorer):
                    self.scorer = scorer
                    self.head = nn.Linear(4, 2)

                def test(self, test_loader):
                    for users, items in test_loader:
                        self.results.append(self.scorer(users, items))
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # full-batch training: the step ends with an evaluation pass
            def train(epoch):
                model.train()
                optimizer.zero_grad()
                loss = criterion(model(features)[idx_train], labels[idx_train])
                loss.backward()
                optimizer.step()
                model.eval()
                output = model(features)
                return criterion(output[idx_val], labels[idx_val])

            for epoch in range(200):
                train(epoch)
            """,
            lines=(9,),
        ),
        Invalid(
            """
            import torch

            def evaluate(model, val_loader):
                model.eval()
                correct = 0
                for images, labels in val_loader:  # full pass
                    logits = model(images)
                    # count hits
                    correct += (logits.argmax(1) == labels).sum().item()

                return correct
            """,
            lines=(6,),
            fixed="""
            import torch

            def evaluate(model, val_loader):
                model.eval()
                correct = 0
                with torch.no_grad():
                    for images, labels in val_loader:  # full pass
                        logits = model(images)
                        # count hits
                        correct += (logits.argmax(1) == labels).sum().item()

                return correct
            """,
        ),
        Invalid(
            """
            import torch as T
            from contextlib import nullcontext
            ctx = nullcontext() if device == "cpu" else T.autocast("cuda", dtype=T.bfloat16)
            model.eval()
            with ctx:
                for batch in test_loader:
                    out = model(batch["input_ids"])
            """,
            lines=(6,),
            fixed="""
            import torch as T
            from contextlib import nullcontext
            ctx = nullcontext() if device == "cpu" else T.autocast("cuda", dtype=T.bfloat16)
            model.eval()
            with ctx:
                with T.no_grad():
                    for batch in test_loader:
                        out = model(batch["input_ids"])
            """,
        ),
        Invalid(
            """
            import torch

            class Trainer:
                def fit(self):
                    for x, y in self.train_loader:
                        self.optimizer.zero_grad()
                        self.criterion(self.model(x), y).backward()
                        self.optimizer.step()
                    self.validate()

                def validate(self):
                    self.model.eval()
                    for x, y in self.val_loader:
                        self.metric.update(self.model(x), y)
            """,
            lines=(13,),
        ),
        Invalid(
            """
            # a recommender that evaluates itself: its own submodules run on the test batches
            import torch
            import torch.nn as nn

            class MF(nn.Module):
                def __init__(self, users, items, k):
                    super().__init__()
                    self.embed_user = nn.Embedding(users, k)
                    self.embed_item = nn.Embedding(items, k)

                def rank(self, test_loader):
                    ranked = []
                    for us, cands in test_loader:
                        scores = (self.embed_user(us.cuda()).unsqueeze(1) * self.embed_item(cands.cuda())).sum(-1)
                        ranked.append(torch.argsort(scores, descending=True))
                    return torch.cat(ranked)

                def evaluate(self, test_loader):
                    out = []
                    for u, i in test_loader:
                        out.append(self.forward(u.cuda(), i.cuda()))
                    return out

                def forward(self, u, i):
                    return (self.embed_user(u) * self.embed_item(i)).sum(-1)
            """,
            lines=(13, 20),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        frozen: bool | None = None
        # An evaluation script beside the training code (evaluate.py) takes no part in training, so its
        # loops are no step code for the other rules; judging evaluation loops is this rule's whole job.
        hot = ctx.own_hot
        for region in hot.step_loops:
            loop = region.node
            if not region.batch_names or loop.lineno in ctx.training_loops or not _looks_like_evaluation(ctx, loop):
                continue  # (a loop that trains through another file's helper, ``lib.train_step(optimizer, ...)``, is no evaluation)
            frozen = _frozen_model(ctx) if frozen is None else frozen
            if frozen:
                return
            regions = regions_reached(ctx, [region], hot)
            if _needs_gradients(ctx, regions) or disables_grad_inside(ctx, loop) or grad_disabled(ctx, loop):
                continue  # (autograd off around the loop is off in what it calls too: ``self._predict(x)``)
            if not _grad_tracked_model_calls(ctx, regions, hot):
                continue
            yield Report(
                loop_header(loop),  # type: ignore[arg-type]
                "Evaluation loop runs the model with autograd on: wrap it in `with torch.no_grad():` "
                "(or `torch.inference_mode()`)",
                fix=lambda loop=loop: self._fix(ctx, loop),
            )
        if frozen is None:
            frozen = _frozen_model(ctx)
        if frozen:
            return
        for call in step_eval_calls(ctx, hot):  # no loop of its own: ``model.eval(); out = model(x)`` in training code
            yield Report(
                call,
                f"`{ast.unparse(call.func)}` runs in eval mode with autograd on: nothing backpropagates through "
                "this output, so run it under `with torch.no_grad():` (or `torch.inference_mode()`)",
            )

    @staticmethod
    def _fix(ctx: RuleContext, loop: ast.stmt) -> Fix | None:
        manager = _no_grad_manager(ctx)
        if manager is None:
            return None
        return wrap_in_with_fix(ctx, loop, manager, f"Wrap the loop in `with {manager}:`", Applicability.UNSAFE)
