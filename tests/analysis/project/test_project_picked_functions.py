"""Issue 25: a function picked from a dict literal by key and then called (``mix = {"feat": aug.feat_mix,
...}[mode]; mix(x)``) runs every step when the call does, in whatever file it is defined.

An invented project, no code of any labelled repository: ``model.py``'s ``forward`` picks a mixup function of
``aug.py`` by the run's mode; the function draws its mask with NumPy and copies it to the GPU (TT305).  The
training loop's batches come from tensors already on the GPU: the mask copy is no loader batch being copied,
so the loader gets no pinned-memory finding (TT303)."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

AUG = """
    import numpy as np
    import torch


    def feat_mix(x, beta):
        rates = np.random.beta(beta, beta, size=(x.shape[0], 1))
        masks = np.random.random(size=tuple(x.shape)) > rates
        masks = torch.from_numpy(masks).to(x.device)
        return masks * x + ~masks * x.flip(0)


    def no_mix(x, beta):
        return x
"""
MODEL = """
    import torch
    from torch import nn

    import aug


    class Net(nn.Module):
        def __init__(self, mode):
            super().__init__()
            self.mode = mode
            self.fc = nn.Linear(8, 1)

        def forward(self, x):
            mix = {"feat": aug.feat_mix, "none": aug.no_mix}[self.mode]
            return self.fc(mix(x, 0.5))
"""
TRAIN = """
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from model import Net

    device = torch.device("cuda")
    model = Net("feat").to(device)
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    X, Y = torch.randn(1024, 8, device=device), torch.randn(1024, 1, device=device)
    loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
    for epoch in range(10):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_a_function_picked_from_a_dict_runs_every_step_and_its_numpy_mask_is_no_batch_copy() -> None:
    files = {"aug.py": AUG, "model.py": MODEL, "train.py": TRAIN}
    solved = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    assert {(f.span.line, f.code) for f in solved.analyze("aug.py")} == {(8, "TT305")}
    assert not [f for f in solved.analyze("train.py") if f.code == "TT303"]
