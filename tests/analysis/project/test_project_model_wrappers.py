"""Issue 25: a training script that only drives a model wrapper chosen by a factory's branches (the
``model = get_model(opts)``, ``model.set_input(x, y)``, ``model.optimize_parameters()`` style of GAN and
segmentation code).  An invented project, no code of any labelled repository: each wrapper's batch copy
runs every step, the script's loop is a CUDA training loop, and look-alikes stay quiet."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.project.program import Project

SEGMENTER = """
    import torch


    class Segmenter:
        def initialize(self, opts):
            self.net = torch.nn.Conv2d(3, 4, 1).cuda()
            self.criterion = torch.nn.CrossEntropyLoss()
            self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1, fused=True)

        def set_input(self, *inputs):
            for idx, item in enumerate(inputs):
                if idx == 0:
                    self.input = item.cuda()
                elif idx == 1:
                    self.target = item.cuda()

        def optimize_parameters(self):
            self.optimizer.zero_grad()
            loss = self.criterion(self.net(self.input), self.target)
            loss.backward()
            self.optimizer.step()
"""
CLASSIFIER = """
    import torch


    class Classifier:
        def initialize(self, opts):
            self.net = torch.nn.Linear(8, 2).cuda()
            self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1, fused=True)

        def set_input(self, images, labels):
            self.input = images.cuda()
            self.target = labels.cuda()

        def optimize_parameters(self):
            self.optimizer.zero_grad()
            torch.nn.functional.cross_entropy(self.net(self.input), self.target).backward()
            self.optimizer.step()
"""
MODELS = """
    def get_model(opts):
        model = None
        if opts.type == "seg":
            from segmenter import Segmenter
            model = Segmenter()
        elif opts.type == "cls":
            from classifier import Classifier
            model = Classifier()
        model.initialize(opts)
        return model
"""
TRAIN = """
    from torch.utils.data import DataLoader
    from models import get_model


    def train(opts, dataset):
        model = get_model(opts)
        loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True, persistent_workers=True)
        for epoch in range(10):
            for idx, (images, labels) in enumerate(loader):
                model.set_input(images, labels)
                model.optimize_parameters()
                if idx == 0:  # the step loop's own counter: once per epoch
                    preview = images.to(opts.device)
"""
FILES = {"segmenter.py": SEGMENTER, "classifier.py": CLASSIFIER, "models.py": MODELS, "train.py": TRAIN}


def project() -> Project:
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in FILES.items())


def found(proj: Project, path: str) -> set[tuple[int, str]]:
    return {(f.span.line, f.code) for f in proj.analyze(path)}


def test_every_branch_of_the_factory_is_a_model_the_loop_may_drive() -> None:
    proj = project()
    # ``*inputs`` holds the batch, and ``if idx == 0`` counts the inputs, not the steps: both copies run every step
    assert {(13, "TT301"), (15, "TT301")} <= found(proj, "segmenter.py")
    assert {(10, "TT301"), (11, "TT301")} <= found(proj, "classifier.py")


def test_the_script_loop_trains_on_cuda_through_the_wrapper() -> None:
    proj = project()
    train = {(f.span.line, f.code): f for f in proj.analyze("train.py")}
    finding = train[(9, "TT504")]  # the loop's training step is optimize_parameters(), in a file that uses CUDA
    assert "whose training step this file runs" in finding.message


def test_the_step_loops_own_counter_still_guards_a_rare_branch() -> None:
    assert (13, "TT301") not in found(project(), "train.py")  # ``if idx == 0:`` of the step loop: once per epoch


def test_the_language_servers_view_gives_the_same_findings() -> None:
    proj = project()
    for path in FILES:
        view = proj.view(path)
        text = textwrap.dedent(FILES[path]).lstrip("\n")
        alone = IncrementalAnalyzer(path).analyze(text, project=view)
        assert {(f.span.line, f.code) for f in alone} == found(proj, path), path
