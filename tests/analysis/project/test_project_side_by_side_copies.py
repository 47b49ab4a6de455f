"""Issue 25: one repository holding copies of one program side by side (``alpaca/`` and ``gorilla/alpaca/``),
each script building its ``loss_scaler = NativeScaler()`` from its own copy of ``util/misc.py`` and handing it
to its own copy of ``engine.train_one_epoch``, whose step loop trains only through ``loss_scaler(loss,
optimizer)``.  An invented project, no code of any labelled repository: the name ``loss_scaler`` is built from
two classes across the project, and each engine's loop runs the copy nearest to it, so each script trains and
its optimizer is a CUDA training optimizer."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

MISC = """
    import torch


    class NativeScaler:
        def __init__(self):
            self._scaler = torch.cuda.amp.GradScaler()

        def __call__(self, loss, optimizer):
            self._scaler.scale(loss).backward()
            self._scaler.step(optimizer)
            self._scaler.update()
"""
ENGINE = """
    def train_one_epoch(model, data_loader, optimizer, device, loss_scaler):
        for images, targets in data_loader:
            images = images.to(device, non_blocking=True)
            loss = model(images, targets.to(device, non_blocking=True))
            loss_scaler(loss, optimizer)
            optimizer.zero_grad()
"""
MAIN = """
    import torch
    from engine import train_one_epoch
    from util.misc import NativeScaler


    def main(args, model, data_loader):
        device = torch.device("cuda")
        model.to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        loss_scaler = NativeScaler()
        for epoch in range(args.epochs):
            train_one_epoch(model, data_loader, optimizer, device, loss_scaler)
"""
FILES = {
    f"{root}{name}": text
    for root in ("alpaca/", "gorilla/alpaca/")
    for name, text in (("util/__init__.py", ""), ("util/misc.py", MISC), ("engine.py", ENGINE), ("main.py", MAIN))
}


def _findings(path: str) -> set[tuple[int, str]]:
    proj = Project((name, name, textwrap.dedent(text).lstrip("\n")) for name, text in FILES.items())
    return {(f.span.line, f.code) for f in proj.analyze(path)}


def test_each_copy_trains_through_its_own_scaler() -> None:
    for root in ("alpaca/", "gorilla/alpaca/"):
        assert (9, "TT503") in _findings(f"{root}main.py"), root
