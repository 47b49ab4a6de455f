"""Issue 25: a step loop that gets its model from elsewhere and calls ``model.loss(out, y)`` runs the
loss method of whichever project module class the model is, every step.  An invented project, no code
of any labelled repository.

``train.py``'s ``train_epoch(model, ...)`` calls ``model.forward(x)`` and ``model.loss(pred, y)``; the
model is built by name in ``nets/registry.py``, so no assignment in sight says which class it is.
``GatNet.loss`` and ``MlpNet.loss`` build a tensor on the CPU and copy it to the device (TT305) and
print a host read (TT102): every step.  ``Summary.loss``, of a class that is no ``nn.Module``, stays
alone; and when the loop never calls ``model`` like a model (only ``model.loss``), nothing says it is one."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

NETS = """
    import torch
    import torch.nn as nn


    class GatNet(nn.Module):
        def __init__(self, n_classes, device):
            super().__init__()
            self.fc = nn.Linear(8, n_classes)
            self.n_classes, self.device = n_classes, device

        def forward(self, x):
            return self.fc(x)

        def loss(self, pred, label):
            sizes = torch.zeros(self.n_classes).long().to(self.device)
            print(label.sum().item())
            return nn.functional.cross_entropy(pred, label) + sizes.sum()


    class MlpNet(GatNet):
        def loss(self, pred, label):
            weight = torch.ones(self.n_classes).to(self.device)
            return nn.functional.cross_entropy(pred, label, weight=weight)


    class Summary:
        def loss(self, pred, label):
            return torch.zeros(3).to("cuda")
"""
REGISTRY = """
    from nets.models import GatNet, MlpNet


    def build(name):
        return {"gat": GatNet, "mlp": MlpNet}[name](3, "cuda")
"""
TRAIN = """
    import torch

    from nets.registry import build


    def train_epoch(model, optimizer, loader, device):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            pred = model.forward(x)
            loss = model.loss(pred, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def main(name, loader):
        model = build(name)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            train_epoch(model, optimizer, loader, "cuda")
"""
FILES = {"nets/__init__.py": "", "nets/models.py": NETS, "nets/registry.py": REGISTRY, "train.py": TRAIN}


def project() -> Project:
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in FILES.items())


def test_the_loss_method_of_a_model_chosen_elsewhere_runs_every_step() -> None:
    found = {(f.span.line, f.code) for f in project().analyze("nets/models.py")}
    assert (15, "TT305") in found and (16, "TT102") in found  # GatNet.loss, through train.py's model.loss(pred, y)
    assert (22, "TT305") in found  # MlpNet.loss: the other module class that defines loss
    assert not any(line == 28 for line, _ in found)  # Summary is no nn.Module: not the model


def test_a_receiver_never_called_like_a_model_gets_no_module_methods() -> None:
    unused = TRAIN.replace("pred = model.forward(x)", "pred = x.sum(1, keepdim=True)")  # ``model`` only has ``.loss`` called
    files = dict(FILES, **{"train.py": unused})
    variant = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    found = {(f.span.line, f.code) for f in variant.analyze("nets/models.py")}
    assert not any(code in ("TT305", "TT102") for _, code in found)
