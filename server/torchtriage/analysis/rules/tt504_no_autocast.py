"""TT504: a CUDA training loop with no mixed precision anywhere in the file."""

from __future__ import annotations

import ast

import re
from typing import Iterator

from ...findings import Severity
from ..file_kinds import is_test_file
from ._loaders import regions_reached
from ._spans import loop_header
from .base import Invalid, Report, Rule, RuleContext, Valid

# Any of these means the author already chose a precision (or hands it to a framework).
# Plain substrings of the lower-cased source: a single regex with many alternatives is
# about 100x slower on large files.
_PRECISION_MARKERS = (
    "autocast", "gradscaler", ".half(", "bfloat16", "float16", "torch.half", "bf16", "fp16",
    "mixed_precision", "amp.initialize", "amp_dtype", "use_amp", "--amp", "fp8", "float8",
    "transformer_engine",
)
_PRECISION_SETTING = re.compile(r"\b(precision|amp)\s*=")


def chooses_precision(source: str) -> bool:
    """Whether a file's text chooses a precision (autocast, a half model, an AMP flag, FSDP's MixedPrecision ...)."""
    lowered = source.lower()
    return any(marker in lowered for marker in _PRECISION_MARKERS) or bool(_PRECISION_SETTING.search(lowered))


class NoAutocast(Rule):
    code = "TT504"
    name = "no-autocast"
    severity = Severity.INFO
    category = "compute"
    requires_cuda = True
    summary = "A CUDA training loop runs entirely in fp32: no `torch.autocast` and no half-precision model anywhere in the file."
    why = """
        On GPUs with Tensor Cores (Ampere and newer), matrix multiplications and
        convolutions in bf16 run several times faster than in fp32 and move half
        the bytes. Practitioners report up to about 2x end-to-end throughput on
        transformers from bf16 autocast alone, with no GradScaler needed for bf16.
        Measure it: if switching from fp32 to bf16 gains less than about 20 %,
        precision is not the bottleneck and the time is going elsewhere
        (data loading, synchronisation, launch overhead).
    """
    fix_description = """
        Wrap the forward pass and the loss in
        `with torch.autocast("cuda", dtype=torch.bfloat16):` (keep `backward()`
        and the optimizer step outside). On GPUs without bf16 use
        `dtype=torch.float16` together with `torch.amp.GradScaler`. No automatic
        fix: where autocast goes is a modelling decision.
    """
    fix_applicability = None
    example_bad = """
        for x, y in loader:
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
    """
    example_good = """
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
    """
    VALID = (
        Valid(
            """
            import torch
            for x, y in loader:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = criterion(model(x.cuda()), y.cuda())
                loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # pytorch/examples imagenet-style: the amp scaler is set up elsewhere
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                loss = step_fn(model, x.cuda(), y.cuda())
                scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()
            """
        ),
        Valid(
            """
            # the model itself is converted
            import torch
            model = build().cuda().to(dtype=torch.bfloat16)
            for x, y in loader:
                loss = criterion(model(x.cuda()), y.cuda())
                loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # evaluation only: no training loop in this file
            import torch
            model = model.cuda().eval()
            with torch.no_grad():
                for x, y in test_loader:
                    correct += (model(x.cuda()).argmax(1) == y.cuda()).sum()
            """
        ),
        Valid(
            """
            # CPU-only training
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward(); optimizer.step()
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            import torch
            device = torch.device("cuda")
            model = Net().to(device)
            for epoch in range(10):
                for x, y in train_loader:
                    loss = criterion(model(x.to(device)), y.to(device))
                    loss.backward()
                    optimizer.step()
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch

            def train_step(model, batch, optimizer):
                loss = model(**batch).loss
                loss.backward()
                optimizer.step()

            def main():
                model = AutoModel.from_pretrained(name).cuda()
                while step < max_steps:
                    for batch in train_dl:
                        train_step(model, {k: v.cuda() for k, v in batch.items()}, optimizer)
                        step += 1
            """,
            lines=(11,),
        ),
        Invalid(
            """
            # two training loops (pretrain, finetune): reported once, on the first
            import torch
            model.cuda()
            for x, y in pretrain_loader:
                criterion(model(x.cuda()), y.cuda()).backward(); optimizer.step()
            for x, y in finetune_loader:
                criterion(model(x.cuda()), y.cuda()).backward(); optimizer.step()
            """,
            lines=(4,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        if is_test_file(ctx.path, ctx.source):
            return
        loops = [r.node for r in ctx.hot.step_loops if any(reached.trains for reached in regions_reached(ctx, [r]))]
        loops += [n for n in ctx.nodes_of((ast.For, ast.AsyncFor, ast.While)) if n.lineno in ctx.training_loops]  # trains elsewhere
        for loop in sorted(loops, key=lambda n: (n.lineno, n.col_offset)):
            if chooses_precision(ctx.source) or ctx.precision_from is not None:
                return  # chosen here, or by a project file that imports this one (:mod:`..project.precision`)
            yield Report(
                loop_header(loop),  # type: ignore[arg-type]
                'This CUDA training loop runs in fp32: try `torch.autocast("cuda", dtype=torch.bfloat16)` '
                "around forward and loss (up to ~2x on transformers)",
            )
            return
