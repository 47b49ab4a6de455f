"""Issue 25: loops over the samples of a batch inside the step.  A part of the batch taken there by indexing
(``clip = waves[i][a:b]``) is still step data, so its copy to the GPU is a per-step batch copy (TT301); a new
tensor merely shaped like a part (``torch.ones(part.shape)``) is not batch data.  An invented project, no code
of any labelled repository."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

LOSSES = """
    import torch


    class FocalLoss(torch.nn.Module):
        def forward(self, classifications, annotations):
            losses = []
            for j in range(classifications.shape[0]):
                classification = classifications[j, :, :]
                targets = torch.ones(classification.shape) * -1
                if torch.cuda.is_available():
                    targets = targets.cuda()
                losses.append((classification - targets).sum())
            return torch.stack(losses).mean()
"""
TRAIN = """
    import torch
    from losses import FocalLoss

    criterion = FocalLoss()
    for waves, annotations in loader:
        clips = []
        for i in range(len(waves)):
            clip = waves[i][0:4800]
            clips.append(torch.from_numpy(clip).to("cuda"))
        loss = criterion(model(torch.stack(clips)), annotations)
        loss.backward()
        optimizer.step()
"""
FOCAL_TRAIN = LOSSES + """

    criterion = FocalLoss()
    for images, annotations in loader:
        images = images.cuda(non_blocking=True)
        loss = criterion(model(images), annotations)
        loss.backward()
        optimizer.step()
"""
FILES = {"losses.py": LOSSES, "train.py": TRAIN, "focal_train.py": FOCAL_TRAIN}


def found(path: str) -> set[tuple[int, str]]:
    project = Project((name, name, textwrap.dedent(text).lstrip("\n")) for name, text in FILES.items())
    return {(f.span.line, f.code) for f in project.analyze(path)}


def test_a_part_of_the_batch_sliced_per_sample_is_copied_as_batch_data() -> None:
    assert (9, "TT301") in found("train.py")


def test_a_tensor_shaped_like_a_sample_is_not_batch_data() -> None:
    assert (11, "TT301") not in found("losses.py")
    assert (11, "TT301") not in found("focal_train.py")  # the loss and the step loop in one file
