"""Issue 25: a trainer class picked by key from a dict of project classes, whose ``train`` and the model's
``forward`` are inherited from base classes in other files.  An invented project, no code of any
labelled repository.

* ``Trainer = TRAINERS[opt.task]`` ... ``trainer.train(epoch, loader)``: the dict literal names the classes
  the run may build, and ``train`` is the base class's; it runs ``self.run_epoch(...)``, whose loop over
  the loader is the step loop, so the script's epoch loop is no step loop (``empty_cache`` before the
  step loop runs once an epoch) and the script, which builds the optimizer, trains.
* ``model(x)`` where ``forward`` is defined by the model's project base class: that ``forward`` runs
  every step.
* ``self._forward_once(x, profile)`` hands on a flag that shadows the module's ``profile`` function:
  that function is not called."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

BASE_TRAINER = """
    import torch


    class BaseTrainer:
        def __init__(self, opt, model, optimizer):
            self.opt = opt
            self.model = model
            self.optimizer = optimizer

        def run_epoch(self, phase, epoch, loader):
            if phase != "train":
                self.model.eval()
                torch.cuda.empty_cache()
            for batch in loader:
                x = batch["x"].to("cuda")
                loss = self.model(x).mean()
                if phase == "train":
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()

        def train(self, epoch, loader):
            return self.run_epoch("train", epoch, loader)
"""
DETECTION = """
    from trainers.base import BaseTrainer


    class DetectionTrainer(BaseTrainer):
        pass
"""
FACTORY = """
    from trainers.detection import DetectionTrainer

    TRAINERS = {"detection": DetectionTrainer}
"""
NETS = """
    import torch

    from utils import profile


    class BaseNet(torch.nn.Module):
        def forward(self, x, profile=False):
            return self._forward_once(x, profile)

        def _forward_once(self, x, profile=False):
            if x.sum() > 0:
                x = x * 2
            return self.body(x)


    class SmallNet(BaseNet):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Linear(8, 8)
"""
UTILS = """
    import torch


    def profile(model, x):
        for _ in range(3):
            model(x)
        torch.cuda.empty_cache()
"""
MAIN = """
    import torch

    from nets import SmallNet
    from trainers.factory import TRAINERS


    def main(opt, loader):
        model = SmallNet().cuda()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        Trainer = TRAINERS[opt.task]
        trainer = Trainer(opt, model, optimizer)
        for epoch in range(opt.epochs):
            trainer.train(epoch, loader)
"""
FILES = {"trainers/__init__.py": "", "trainers/base.py": BASE_TRAINER, "trainers/detection.py": DETECTION,
         "trainers/factory.py": FACTORY, "nets.py": NETS, "utils.py": UTILS, "main.py": MAIN}


def project() -> Project:
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in FILES.items())


def test_an_optimizer_built_for_a_trainer_picked_from_a_dict_of_classes_is_a_training_optimizer() -> None:
    found = {(f.span.line, f.code) for f in project().analyze("main.py")}
    assert (9, "TT503") in found


def test_the_base_classes_train_runs_the_step_loop_and_the_scripts_loop_is_per_epoch() -> None:
    found = {(f.span.line, f.code): f for f in project().analyze("trainers/base.py")}
    assert (15, "TT301") in found  # the step loop's blocking copy, reached through the inherited train()
    assert (13, "TT202") not in found  # before the step loop: once an epoch, not every step


def test_an_inherited_forward_runs_every_step_and_a_shadowing_flag_calls_nothing() -> None:
    proj = project()
    nets = {(f.span.line, f.code) for f in proj.analyze("nets.py")}
    assert (11, "TT103") in nets  # BaseNet._forward_once, through SmallNet's inherited forward
    assert not [f for f in proj.analyze("utils.py") if f.code == "TT202"]  # ``profile`` the flag, not the function
