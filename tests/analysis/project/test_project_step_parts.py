"""A training step function that walks the parts of its step's data (DomainBed's ``update(minibatches)``, one
minibatch per domain, then one backward): the loop over the parts is not a step loop, and the function is
the per-step code another file's step loop calls."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

ALGORITHMS = """
    import torch
    import torch.nn.functional as F
    from torch import nn

    class IRM(nn.Module):
        def __init__(self, hparams):
            super().__init__()
            self.net = nn.Linear(4, 2)
            self.optimizer = torch.optim.Adam(self.net.parameters(), fused=True)
            self.hparams = hparams
            self.register_buffer("update_count", torch.tensor([0]))

        def update(self, minibatches):
            nll = 0.0
            for x, y in minibatches:
                nll += F.cross_entropy(self.net(x), y)
            if self.update_count == self.hparams["anneal_iters"]:
                self.optimizer = torch.optim.Adam(self.net.parameters(), fused=True)
            self.optimizer.zero_grad()
            nll.backward()
            self.optimizer.step()
            self.update_count += 1
            return {"loss": nll.item()}
"""

TRAIN = """
    import torch
    from algorithms import IRM

    algorithm = IRM({"anneal_iters": 500}).cuda()
    for step in range(5000):
        minibatches = [(x.cuda(non_blocking=True), y.cuda(non_blocking=True)) for x, y in next(train_iterator)]
        step_vals = algorithm.update(minibatches)
"""


def _project() -> Project:
    files = {"algorithms.py": ALGORITHMS, "train.py": TRAIN}
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def test_the_step_function_runs_per_step_and_its_buffer_tests_sync() -> None:
    found = {(f.span.line, f.code) for f in _project().analyze("algorithms.py")}
    assert (17, "TT103") in found  # `if self.update_count == ...`: a buffer, read on the host every step
    assert (23, "TT101") in found  # `nll.item()` in the returned log, every step


def test_the_loop_over_the_parts_is_not_a_step_loop() -> None:
    ctx = _project().context("algorithms.py")
    assert ctx is not None
    kinds = {(region.kind, getattr(region.node, "name", None)) for region in ctx.hot.regions}
    assert ("step-function", "update") in kinds
    assert not [region for region in ctx.hot.regions if region.kind == "step-loop"]
