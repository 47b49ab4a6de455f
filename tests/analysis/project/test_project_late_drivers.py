"""Issue 25: a training script whose model is built by a registry the script's imports never reach (the
model files are imported by name at run time, as BasicSR's ``basicsr/models/__init__.py`` does), and data
kept on the model instance between its per-step methods.  An invented project, no code of any labelled
repository.

* The script's loop runs the model's training step (``model.optimize(step)``): it trains, so it is no script
  beside the training code, and the other per-step calls of its loop (``model.feed(data)``) are followed.
* ``self.gt = data["gt"].to(self.device)`` makes ``self.gt`` step data, not everything on ``self``: a
  setting read from ``self.opt`` stays a host number in the functions it is handed to."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

REGISTRY = """
    class Registry:
        def __init__(self):
            self._classes = {}

        def register(self):
            def deco(cls):
                self._classes[cls.__name__] = cls
                return cls
            return deco

        def get(self, name):
            return self._classes[name]


    MODELS = Registry()
"""
MODELS_INIT = """
    import importlib
    import os

    from registry import MODELS

    for _file in os.listdir(os.path.dirname(__file__)):
        if _file.endswith("_model.py"):
            importlib.import_module(f"models.{_file[:-3]}")


    def build_model(opt):
        return MODELS.get(opt["type"])(opt)
"""
PAIR_MODEL = """
    import torch
    from registry import MODELS
    from transforms import paired_crop


    @MODELS.register()
    class PairModel:
        def __init__(self, opt):
            self.opt = opt
            self.device = torch.device("cuda")
            self.net = torch.nn.Conv2d(3, 3, 3).to(self.device)
            self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)

        def feed(self, data):
            self.gt = data["gt"].to(self.device)
            self.lq = data["lq"].to(self.device)
            self.gt, self.lq = paired_crop(self.gt, self.lq, self.opt["patch"], self.opt["scale"])

        def optimize(self, step):
            self.optimizer.zero_grad()
            loss = (self.net(self.lq) - self.gt).abs().mean()
            loss.backward()
            self.optimizer.step()
"""
TRANSFORMS = """
    import random


    def paired_crop(gt, lq, patch, scale):
        h_lq, w_lq = lq.size()[-2:]
        h_gt, w_gt = gt.size()[-2:]
        if h_gt != h_lq * scale or w_gt != w_lq * scale:
            raise ValueError("the scale does not match")
        top = random.randint(0, h_lq - patch)
        top_gt = int(top * scale)
        return gt[..., top_gt:top_gt + patch * scale, :], lq[..., top:top + patch, :]
"""
TRAIN = """
    from models import build_model


    def main(opt, loader):
        model = build_model(opt)
        step = 0
        for data in loader:
            step += 1
            model.feed(data)
            model.optimize(step)


    if __name__ == "__main__":
        main({"type": "PairModel", "patch": 32, "scale": 4}, [])
"""


def project() -> Project:
    files = {"registry.py": REGISTRY, "models/__init__.py": MODELS_INIT, "models/pair_model.py": PAIR_MODEL,
             "transforms.py": TRANSFORMS, "train.py": TRAIN}
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def test_a_script_whose_loop_runs_a_registry_models_training_step_drives_training() -> None:
    proj = project()
    model = {(f.span.line, f.code): f for f in proj.analyze("models/pair_model.py")}
    assert (15, "TT301") in model and (16, "TT301") in model  # feed(): reached from the script's loop
    assert "train.py:9" in model[(15, "TT301")].message
    assert proj.context("train.py").auxiliary is None  # (it trains through the model's step)


def test_a_setting_kept_on_self_is_no_step_data_where_it_is_handed_on() -> None:
    proj = project()
    crop = proj.analyze("transforms.py")
    assert not [f for f in crop if f.code in ("TT101", "TT103")], crop  # sizes and the scale are host numbers


def test_step_data_kept_on_self_is_still_step_data_where_it_is_handed_on() -> None:
    """The same crop, given the tensors themselves to test: ``self.gt`` carries the batch into it."""
    crop = TRANSFORMS.replace("if h_gt != h_lq * scale", "if gt.mean() > lq.mean() * scale")
    files = {"registry.py": REGISTRY, "models/__init__.py": MODELS_INIT, "models/pair_model.py": PAIR_MODEL,
             "transforms.py": crop, "train.py": TRAIN}
    proj = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    found = {(f.span.line, f.code) for f in proj.analyze("transforms.py")}
    assert (7, "TT103") in found
