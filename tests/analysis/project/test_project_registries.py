"""Issue 25: models and networks built by name from a registry (``@NETS.register()`` ...
``NETS.get(opt["type"])(**opt)``), the BasicSR / SegmenTron / detectron2 shape.  An invented project, no
code of any labelled repository: a per-step call of the built object reaches every registered class's
``forward`` (or the method called), through the factories that return it; look-alikes stay quiet."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

REGISTRY = """
    class Registry:
        def __init__(self, name):
            self._map = {}

        def register(self, obj=None):
            def deco(cls):
                self._map[cls.__name__] = cls
                return cls
            return deco(obj) if obj is not None else deco

        def get(self, name):
            return self._map[name]


    NETS = Registry("net")
    TRAINERS = Registry("trainer")
"""
NETS = """
    import torch
    from torch import nn
    from registry import NETS


    @NETS.register()
    class Upscaler(nn.Module):
        def forward(self, x):
            scale = torch.tensor([2.0]).cuda()
            return self.body(x) * scale


    @NETS.register
    class Denoiser(nn.Module):
        def forward(self, x):
            noise_level = x.std().item()
            return self.body(x) - noise_level


    class NotRegistered(nn.Module):
        def forward(self, x):
            return x.cpu().numpy()


    def build_net(opt):
        net = NETS.get(opt["type"])(**opt)
        return net.cuda()
"""
TRAINERS = """
    import torch
    from registry import TRAINERS
    from nets import build_net


    @TRAINERS.register()
    class PairTrainer:
        def __init__(self, opt):
            self.net = build_net(opt["net"])
            self.optimizer = torch.optim.Adam(self.net.parameters())

        def train_step(self, lq, gt):
            self.optimizer.zero_grad()
            out = self.net(lq)
            loss = (out - gt).abs().mean()
            loss.backward()
            self.optimizer.step()
            self.last = loss.item()


    def build_trainer(opt):
        return TRAINERS.get(opt["trainer"])(opt)
"""
TRAIN = """
    import torch
    from trainers import build_trainer


    def main(opt, loader):
        trainer = build_trainer(opt)
        for lq, gt in loader:
            trainer.train_step(lq.cuda(), gt.cuda())


    if __name__ == "__main__":
        main({}, [])
"""


def project() -> Project:
    files = {"registry.py": REGISTRY, "nets.py": NETS, "trainers.py": TRAINERS, "train.py": TRAIN}
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def test_a_registry_built_trainer_and_its_networks_run_every_step() -> None:
    proj = project()
    trainer = {(f.span.line, f.code): f for f in proj.analyze("trainers.py")}
    assert (18, "TT101") in trainer  # the trainer's step, reached through build_trainer's registry lookup
    assert "train.py:8" in trainer[(18, "TT101")].message
    nets = {(f.span.line, f.code) for f in proj.analyze("nets.py")}
    assert (9, "TT305") in nets  # Upscaler.forward: a host tensor moved every step
    assert (16, "TT101") in nets  # Denoiser.forward (registered without the call parentheses)
    assert not [key for key in nets if key[0] == 22]  # NotRegistered is never built


def test_without_the_registry_nothing_reaches_the_networks() -> None:
    """The same files with a plain lookup table instead of decorators: no class is known to be built."""
    nets = NETS.replace("@NETS.register()\n", "").replace("@NETS.register\n", "")
    files = {"registry.py": REGISTRY, "nets.py": nets, "trainers.py": TRAINERS, "train.py": TRAIN}
    proj = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    assert not [f for f in proj.analyze("nets.py") if f.code in ("TT101", "TT305")]
