"""Issue 25: a step loop hands its batch to a model wrapper of another file that copies it to the GPU
(``model.set_input(images, labels)`` whose body does ``x.cuda()``).  The loop's own file moves nothing, yet
its loader's batches are copied from pageable memory every step: TT303.  An invented project, no code of any
labelled repository; a wrapper that keeps the batch on the CPU is the look-alike that stays quiet."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.project.program import Project

WRAPPER = """
    import torch


    class Wrapper:
        def __init__(self):
            self.net = torch.nn.Linear(8, 2).cuda()
            self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1, fused=True)

        def set_input(self, *inputs):
            for idx, item in enumerate(inputs):
                if idx == 0:
                    self.input = item.cuda()
                else:
                    self.target = item.cuda()

        def optimize_parameters(self):
            self.optimizer.zero_grad()
            torch.nn.functional.cross_entropy(self.net(self.input), self.target).backward()
            self.optimizer.step()
"""
CPU_WRAPPER = """
    import torch


    class CpuWrapper:
        def __init__(self):
            self.net = torch.nn.Linear(8, 2)
            self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)

        def keep_input(self, images, labels):
            self.input = images.float()
            self.target = labels

        def optimize_parameters(self):
            self.optimizer.zero_grad()
            torch.nn.functional.cross_entropy(self.net(self.input), self.target).backward()
            self.optimizer.step()
"""
TRAIN = """
    from torch.utils.data import DataLoader
    from wrapper import Wrapper
    from cpu_wrapper import CpuWrapper


    def train(dataset):
        model = Wrapper()
        loader = DataLoader(dataset, batch_size=8, num_workers=4, persistent_workers=True)
        for epoch in range(10):
            for images, labels in loader:
                model.set_input(images, labels)
                model.optimize_parameters()


    def train_on_cpu(dataset):
        model = CpuWrapper()
        loader = DataLoader(dataset, batch_size=8, num_workers=4, persistent_workers=True)
        for epoch in range(10):
            for images, labels in loader:
                model.keep_input(images, labels)
                model.optimize_parameters()
"""
FILES = {"wrapper.py": WRAPPER, "cpu_wrapper.py": CPU_WRAPPER, "train.py": TRAIN}


def project() -> Project:
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in FILES.items())


def found(proj: Project, path: str) -> set[tuple[int, str]]:
    return {(f.span.line, f.code) for f in proj.analyze(path)}


def test_a_loader_whose_batches_a_wrapper_moves_to_the_gpu_wants_pinned_memory() -> None:
    train = found(project(), "train.py")
    assert (8, "TT303") in train  # the wrapper's set_input copies every batch to the GPU
    assert (17, "TT303") not in train  # keep_input leaves the batch on the CPU (another function's ``loader``)


def test_the_wrapper_copies_are_per_step_copies() -> None:
    assert {(12, "TT301"), (14, "TT301")} <= found(project(), "wrapper.py")


def test_the_language_servers_view_gives_the_same_findings() -> None:
    proj = project()
    assert proj.view("train.py") is not None and proj.view("train.py").batch_movers == frozenset({"set_input"})
    for path in FILES:
        text = textwrap.dedent(FILES[path]).lstrip("\n")
        alone = IncrementalAnalyzer(path).analyze(text, project=proj.view(path))
        assert {(f.span.line, f.code) for f in alone} == found(proj, path), path


# Two files down: the wrapper hands each part of the batch on to a helper of a third file that moves it
# (``model.parse_batch(batch)`` -> ``to_gpu(x)`` -> ``x.cuda()``); one that hands it to a helper keeping it on
# the CPU stays quiet.
HELPERS = """
    import torch


    def to_gpu(x):
        x = x.contiguous()
        if torch.cuda.is_available():
            x = x.cuda(non_blocking=True)
        return x


    def to_float(x):
        return x.contiguous().float()
"""
PARSER = """
    import torch
    from helpers import to_float, to_gpu


    class Tacotron(torch.nn.Module):
        def parse_batch(self, batch):
            text, mel = batch
            return to_gpu(text).long(), to_gpu(mel).float()

        def keep_batch(self, batch):
            text, mel = batch
            return to_float(text), to_float(mel)
"""
DRIVER = """
    from torch.utils.data import DataLoader
    from parser import Tacotron


    def train(dataset, optimizer):
        model = Tacotron().cuda()
        loader = DataLoader(dataset, batch_size=8, num_workers=4, persistent_workers=True)
        for epoch in range(10):
            for batch in loader:
                x, y = model.parse_batch(batch)
                model(x).sub(y).pow(2).mean().backward()
                optimizer.step()


    def train_on_cpu(dataset, optimizer):
        model = Tacotron().cuda()
        loader = DataLoader(dataset, batch_size=8, num_workers=4, persistent_workers=True)
        for epoch in range(10):
            for batch in loader:
                x, y = model.keep_batch(batch)
                model(x).sub(y).pow(2).mean().backward()
                optimizer.step()
"""


def test_a_wrapper_that_hands_the_batch_on_to_a_mover_of_another_file_moves_it() -> None:
    files = {"helpers.py": HELPERS, "parser.py": PARSER, "driver.py": DRIVER}
    proj = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    driver = found(proj, "driver.py")
    assert (7, "TT303") in driver
    assert (17, "TT303") not in driver
    assert proj.view("driver.py").batch_movers == frozenset({"parse_batch"})  # type: ignore[union-attr]
