"""Issue 25: a model module chosen by name (``importlib.import_module(args.model)`` ... ``model.get_model(n)``),
the helpers it calls, and where they run.  An invented project, no code of any labelled repository: every
project module defining ``get_model`` may be the one the run picks, so their ``forward`` and what it calls
run every step, on CUDA because the training script's step loop is CUDA code; a copy of the model saved
in a run's log folder is no candidate."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

UTILS = """
    import torch


    def sample_points(xyz, n):
        start = torch.randint(0, xyz.size(1), (xyz.size(0),)).to(xyz.device)
        return xyz[:, start[:n]]
"""
MODEL_A = """
    from torch import nn
    from point_utils import sample_points


    class get_model(nn.Module):
        def forward(self, xyz):
            return self.head(sample_points(xyz, 128))
"""
MODEL_B = """
    from torch import nn


    class get_model(nn.Module):
        def forward(self, xyz):
            return self.head(xyz).sum().item()
"""
TRAIN = """
    import argparse
    import importlib
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="cls_a")
    args = parser.parse_args()


    def main(loader):
        model = importlib.import_module(args.model)
        classifier = model.get_model()
        classifier = classifier.cuda()
        optimizer = torch.optim.Adam(classifier.parameters(), fused=True)
        for points, target in loader:
            points, target = points.cuda(non_blocking=True), target.cuda(non_blocking=True)
            loss = torch.nn.functional.cross_entropy(classifier(points), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def project() -> Project:
    files = {"models/point_utils.py": UTILS, "models/cls_a.py": MODEL_A, "models/cls_b.py": MODEL_B, "train.py": TRAIN,
             "log/run1/cls_b.py": MODEL_B}
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def test_every_model_a_name_may_pick_runs_every_step_on_cuda() -> None:
    proj = project()
    utils = {(f.span.line, f.code): f for f in proj.analyze("models/point_utils.py")}
    assert (5, "TT305") in utils  # a helper of cls_a's forward: per step, and CUDA through train.py
    assert utils[(5, "TT305")].message.endswith("CUDA is used by train.py, whose step loop runs this code.")
    assert utils[(5, "TT305")].extra["device_from"] == "train.py"
    assert (6, "TT101") in {(f.span.line, f.code) for f in proj.analyze("models/cls_b.py")}


def test_a_copy_in_a_runs_log_folder_is_not_a_candidate() -> None:
    assert not [f for f in project().analyze("log/run1/cls_b.py") if f.code == "TT101"]


def test_the_language_servers_view_gives_the_same_findings() -> None:
    from torchtriage.analysis.engine import IncrementalAnalyzer

    proj = project()
    source = textwrap.dedent(UTILS).lstrip("\n")
    got = IncrementalAnalyzer("models/point_utils.py").analyze(source, project=proj.view("models/point_utils.py"))
    assert [(f.code, f.span, f.message) for f in got] == [(f.code, f.span, f.message) for f in proj.analyze("models/point_utils.py")]
    assert proj.view("models/point_utils.py").cuda_caller == "train.py"
