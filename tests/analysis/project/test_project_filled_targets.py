"""Issue 25: a label-smoothing loss fills one-hot targets into a tensor it makes on the host
(``zeros = torch.zeros(...)``, ``targets = zeros.scatter_(1, labels, 1)``) and moves that: a tensor made in
the step (TT305's case), not a copy of the batch (TT301), though the batch's labels say where to write.  An
invented project, no code of any labelled repository."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

LOSSES = """
    import torch
    from torch import nn


    class SmoothedLoss(nn.Module):
        def forward(self, inputs, targets):
            log_probs = inputs.log_softmax(1)
            zeros = torch.zeros(log_probs.size())
            targets = zeros.scatter_(1, targets.unsqueeze(1).cpu(), 1)
            targets = targets.cuda()
            return (-targets * log_probs).mean(0).sum()
"""
TRAIN = """
    from losses import SmoothedLoss

    criterion = SmoothedLoss()
    for images, labels in loader:
        images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
"""


def test_targets_filled_into_a_host_made_tensor_are_not_a_batch_copy() -> None:
    files = {"losses.py": LOSSES, "train.py": TRAIN}
    project = Project((name, name, textwrap.dedent(text).lstrip("\n")) for name, text in files.items())
    found = {(f.span.line, f.code) for f in project.analyze("losses.py")}
    context = project.context("losses.py")
    assert context is not None and [e.func.name for e in context.hot_entries] == ["forward"]  # runs every step
    assert (10, "TT301") not in found
