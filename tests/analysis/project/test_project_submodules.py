"""Issue 25: the model's own code is per-step code, down through the submodules it builds in its own
file (``self.attn = Attention(dim)`` ... ``self.attn(x)`` runs ``Attention.forward``) and those it keeps
in containers (``for blk in self.blocks: x = blk(x, size)``, a ``Sequential``).  An invented project, no
code of any labelled repository; a look-alike class that is never built stays quiet."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

MODEL = """
    import torch
    from torch import nn


    class Attention(nn.Module):
        def forward(self, x):
            scale = x.size(-1) ** -0.5
            if torch.isnan(x).any():
                raise ValueError("nan input")
            return torch.softmax(x @ x.transpose(-2, -1) * scale, -1) @ x


    class Unused(nn.Module):
        def forward(self, x):
            return float(x.sum())


    class Net(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.attn = Attention()
            self.head = nn.Linear(dim, 2)

        def forward(self, x):
            return self.head(self.attn(x))
"""
TRAIN = """
    import torch
    from model import Net


    def main(loader):
        model = Net(16).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def project() -> Project:
    files = {"model.py": MODEL, "train.py": TRAIN}
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def test_a_submodule_built_in_the_models_file_runs_every_step() -> None:
    found = {(f.span.line, f.code): f for f in project().analyze("model.py")}
    assert (8, "TT103") in found  # Attention.forward, reached from Net.forward in the same file
    assert "called from train.py:9 → model.py:25" in found[(8, "TT103")].message
    assert not [key for key in found if key[0] == 15]  # Unused is never built


def test_the_entries_name_the_path_through_the_model() -> None:
    proj = project()
    proj.solve()
    entries = {entry.func.name + "@" + str(entry.func.lineno): entry.hot_path for entry in proj.by_path["model.py"].ctx.hot_entries}
    assert entries["forward@24"] == ("train.py:9",)
    assert entries["forward@6"] == ("train.py:9", "model.py:25")


BLOCKS = """
    import torch
    from torch import nn


    class Block(nn.Module):
        def forward(self, x, size):
            h, w = size
            if self.resolution == size:
                return x.view(-1, h, w)
            return x.view(-1, h, w) + x.mean().item()


    class Stem(nn.Module):
        def forward(self, x):
            return x * torch.tensor([0.5]).cuda()


    class Backbone(nn.Module):
        def __init__(self, depth):
            super().__init__()
            layers = [Stem()]
            self.stem = nn.Sequential(*layers)
            self.blocks = nn.ModuleList([Block() for _ in range(depth)])

        def forward(self, x):
            x = self.stem(x)
            size = (x.shape[2], x.shape[3])
            for blk in self.blocks:
                x = blk(x, size)
            return x
"""


def test_blocks_kept_in_containers_run_every_step() -> None:
    """``for blk in self.blocks`` and a ``Sequential`` built from a list reach the blocks' ``forward``;
    the size tuple handed down is no tensor."""
    train = TRAIN.replace("from model import Net", "from blocks import Backbone").replace("Net(16)", "Backbone(2)")
    files = {"blocks.py": BLOCKS, "train.py": train}
    proj = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    found = {(f.span.line, f.code) for f in proj.analyze("blocks.py")}
    assert (10, "TT101") in found  # Block.forward, through the loop over the ModuleList
    assert (15, "TT305") in found  # Stem.forward, through the Sequential
    assert not [key for key in found if key[0] == 8]  # ``self.resolution == size``: a tuple of sizes, no tensor
