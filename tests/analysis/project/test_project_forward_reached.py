"""Issue 25: a helper class in another file, built in a model's ``forward``, runs its ``__init__`` every
pass.  An invented project, no code of any labelled repository.

``layers.py``'s ``forward`` builds ``CausalMask(n, device=x.device)`` from ``masks.py``, whose ``__init__``
makes the mask on the CPU and copies it to the device (TT305) every forward pass; another ``forward``
builds ``PaddingMask`` when its ``mask`` parameter is None, which is no cache being filled; and
``embeddings.py``'s ``sinusoidal``, called by that ``forward``, makes its frequencies on the CPU every pass
(its ``max_period=10000`` is a setting, not data that travels anyway).  ``Cache``, built
once in ``__init__`` of the layer, and ``Unused``, built nowhere, stay alone."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

MASKS = """
    import torch


    class CausalMask:
        def __init__(self, n, device="cpu"):
            self.mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1).to(device)


    class Cache:
        def __init__(self, n, device="cpu"):
            self.table = torch.zeros(n, n).to(device)


    class Unused:
        def __init__(self, n, device="cpu"):
            self.table = torch.ones(n).to(device)


    class PaddingMask:
        def __init__(self, n, device="cpu"):
            self.mask = torch.zeros(n, dtype=torch.bool).to(device)
"""
LAYERS = """
    import torch

    from embeddings import sinusoidal
    from masks import Cache, CausalMask, PaddingMask


    class Attention(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.cache = Cache(n)

        def forward(self, x):
            mask = CausalMask(x.size(1), device=x.device)
            x = x + sinusoidal(torch.arange(x.size(1), device=x.device), x.size(2))
            scores = x @ x.transpose(1, 2)
            return scores.masked_fill(mask.mask, 0)


    class CrossAttention(torch.nn.Module):
        def forward(self, x, mask):
            if mask is None:  # what the caller handed in (None from a layer's default): no cache being filled
                mask = PaddingMask(x.size(1), device=x.device)
            return x.masked_fill(mask.mask, 0)
"""
MAIN = """
    import lightning

    from layers import Attention


    def main(loader):
        model = Attention(16).cuda()  # trained by a library's loop: no step loop here for the project to follow
        lightning.Trainer().fit(model, loader)
"""
EMBEDDINGS = """
    import math

    import torch


    def sinusoidal(steps, dim, max_period=10000):
        half = dim // 2
        freqs = torch.exp(-math.log(max_period) * torch.arange(half) / half).to(device=steps.device)
        return steps[:, None].float() * freqs[None]
"""
FILES = {"masks.py": MASKS, "layers.py": LAYERS, "embeddings.py": EMBEDDINGS, "main.py": MAIN}


def project() -> Project:
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in FILES.items())


def test_a_helper_built_in_another_files_forward_runs_its_init_every_pass() -> None:
    found = {(f.span.line, f.code) for f in project().analyze("masks.py")}
    assert (6, "TT305") in found  # CausalMask.__init__: built in Attention.forward
    assert (11, "TT305") not in found and (16, "TT305") not in found  # built once in __init__; never built
    assert (21, "TT305") in found  # PaddingMask.__init__: built when forward's ``mask`` parameter is None


def test_a_function_another_files_forward_calls_is_forward_code_and_a_number_default_is_no_data() -> None:
    found = {(f.span.line, f.code) for f in project().analyze("embeddings.py")}
    assert (8, "TT305") in found  # torch.arange made on the CPU, exp'd and moved every pass; max_period is a setting
