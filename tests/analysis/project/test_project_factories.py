"""Issue 25: loaders built by a factory from a yacs-style config and iterated by the caller every epoch
(``train_loader, val_loader = build_loader(config)``).  An invented project, no code of any labelled
repository: the loader rules report the DataLoader calls in the factory, with the config default and
where they are iterated; look-alikes that stay quiet (a loader iterated once, a persistent one)."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.project.program import Project

CONFIG = """
    from yacs.config import CfgNode as CN

    _C = CN()
    _C.DATA = CN()
    _C.DATA.NUM_WORKERS = 8
    _C.DATA.PIN_MEMORY = False
    _C.DATA.BATCH_SIZE = 128
"""
BUILD = """
    import torch
    from torch.utils.data import DataLoader


    def build_loader(config):
        train = DataLoader(train_set(), batch_size=config.DATA.BATCH_SIZE, num_workers=config.DATA.NUM_WORKERS,
                           pin_memory=config.DATA.PIN_MEMORY, drop_last=True)
        val = DataLoader(val_set(), batch_size=config.DATA.BATCH_SIZE, num_workers=config.DATA.NUM_WORKERS,
                         pin_memory=True, persistent_workers=True)
        probe = DataLoader(val_set(), batch_size=4, num_workers=config.DATA.NUM_WORKERS)
        return train, val, probe
"""
MAIN = """
    import torch
    from config import _C as config
    from data.build import build_loader


    def train_one_epoch(model, loader, optimizer):
        for images, targets in loader:
            loss = torch.nn.functional.cross_entropy(model(images.cuda(non_blocking=True)), targets.cuda(non_blocking=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def main():
        model = torch.nn.Linear(8, 2).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
        train_loader, val_loader, probe_loader = build_loader(config)
        shapes = [x.shape for x, _ in probe_loader]  # iterated once, before training
        for epoch in range(90):
            train_one_epoch(model, train_loader, optimizer)
            train_one_epoch(model, val_loader, optimizer)


    if __name__ == "__main__":
        main()
"""


def project() -> Project:
    files = {"config.py": CONFIG, "data/__init__.py": "", "data/build.py": BUILD, "main.py": MAIN}
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def test_a_factorys_loaders_are_judged_where_they_are_built() -> None:
    proj = project()
    found = {(f.span.line, f.code): f.message for f in proj.analyze("data/build.py")}
    assert (6, "TT304") in found and (6, "TT303") in found  # the train loader: 8 workers, not pinned, every epoch
    assert "`_C.DATA.NUM_WORKERS` default (config.py:5)" in found[(6, "TT304")]
    assert "`build_loader` returns it to main.py:17; the step loop at main.py:7 iterates it every epoch" in found[(6, "TT304")]
    assert "step loop at main.py:7" in found[(6, "TT303")]
    assert not [key for key in found if key[0] in (8, 10) and key[1] in ("TT303", "TT304")]  # persistent / iterated once


def test_the_language_servers_view_gives_the_same_findings() -> None:
    proj = project()
    source = textwrap.dedent(BUILD).lstrip("\n")
    got = IncrementalAnalyzer("data/build.py").analyze(source, project=proj.view("data/build.py"))
    assert [(f.code, f.span, f.message) for f in got] == [(f.code, f.span, f.message) for f in proj.analyze("data/build.py")]
    assert proj.view("data/build.py").returned_loaders


def test_a_config_object_built_at_the_top_gives_its_fields_defaults() -> None:
    """``_C = CN()`` then ``_C.WORKERS = 8`` (one level): ``cfg.WORKERS`` holds 8; a library setting
    (``torch.backends.cudnn.benchmark = False``) is no config default."""
    files = {
        "lib/__init__.py": "",
        "lib/config.py": "from yacs.config import CfgNode as CN\n_C = CN()\n_C.WORKERS = 8\n_C.PIN_MEMORY = False\ncfg = _C\n",
        "train.py": textwrap.dedent("""
            import os
            import torch
            from torch.utils.data import DataLoader
            from lib.config import cfg

            torch.backends.cudnn.benchmark = False
            loader = DataLoader(dataset, batch_size=32, num_workers=cfg.WORKERS, pin_memory=cfg.PIN_MEMORY)
            model = torch.nn.Linear(8, 2).cuda()
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x.cuda(non_blocking=True)).sum()
                    loss.backward()
        """).lstrip("\n"),
    }
    proj = Project((path, path, text) for path, text in files.items())
    found = {(f.span.line, f.code): f.message for f in proj.analyze("train.py")}
    assert "`_C.WORKERS` default (config.py:3)" in found[(7, "TT304")]
    assert "`_C.PIN_MEMORY` default (config.py:4)" in found[(7, "TT303")]
    proj.solve()
    assert proj.by_path["train.py"].ctx.attribute_default("benchmark") is None


def test_a_project_subclass_of_dataloader_is_a_dataloader_through_a_re_export() -> None:
    """``class DataLoaderX(DataLoader)`` in ``lib/utils/loaders.py``, re-exported by ``lib/utils/__init__.py`` and
    used as ``DataLoaderX(...)``: judged like a DataLoader; a class that merely wraps one is not."""
    files = {
        "lib/__init__.py": "",
        "lib/utils/__init__.py": "from .loaders import DataLoaderX, Prefetcher\n",
        "lib/utils/loaders.py": textwrap.dedent("""
            from torch.utils.data import DataLoader


            class DataLoaderX(DataLoader):
                def __iter__(self):
                    return super().__iter__()


            class Prefetcher:
                def __init__(self, loader, num_workers=0):
                    self.loader = loader
        """).lstrip("\n"),
        "train.py": textwrap.dedent("""
            import torch
            from lib.utils import DataLoaderX, Prefetcher

            loader = DataLoaderX(dataset, batch_size=32, num_workers=8)
            other = Prefetcher(loader, num_workers=0)
            model = torch.nn.Linear(8, 2).cuda()
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x.cuda(non_blocking=True)).sum()
                    loss.backward()
        """).lstrip("\n"),
    }
    proj = Project((path, path, text) for path, text in files.items())
    found = {(f.span.line, f.code) for f in proj.analyze("train.py")}
    assert {(4, "TT303"), (4, "TT304")} <= found
    assert not {key for key in found if key[0] == 5}
    assert proj.view("train.py").loader_classes == frozenset({"DataLoaderX"})


def test_a_method_that_unpacks_a_factorys_result_and_returns_the_loader_hands_it_on() -> None:
    """``data_set, data_loader = data_provider(args, flag)`` / ``return data_set, data_loader`` in a method
    the experiment calls as ``self._get_data(...)``: the loader the step loop iterates every epoch is the
    factory's; a wrapper that returns only the dataset hands no loader on."""
    files = {
        "data_factory.py": textwrap.dedent("""
            from torch.utils.data import DataLoader


            def data_provider(args, flag):
                data_set = make_set(args, flag)
                data_loader = DataLoader(data_set, batch_size=args.batch_size, num_workers=8, shuffle=flag == "train")
                return data_set, data_loader


            def probe_provider(args):
                probe_loader = DataLoader(make_set(args, "probe"), batch_size=4, num_workers=8)
                return probe_loader
        """).lstrip("\n"),
        "exp.py": textwrap.dedent("""
            import torch
            from data_factory import data_provider, probe_provider


            class Experiment:
                def __init__(self, args):
                    self.args = args
                    self.device = torch.device("cuda")

                def _get_data(self, flag):
                    data_set, data_loader = data_provider(self.args, flag)
                    return data_set, data_loader

                def _probe_set(self):
                    loader = probe_provider(self.args)
                    return loader.dataset

                def train(self):
                    train_data, train_loader = self._get_data(flag="train")
                    probe = self._probe_set()
                    for epoch in range(self.args.epochs):
                        for batch_x, batch_y in train_loader:
                            loss = self.model(batch_x.float().to(self.device)).sum()
                            loss.backward()
                            self.optimizer.step()
        """).lstrip("\n"),
    }
    proj = Project((path, path, text) for path, text in files.items())
    found = {(f.span.line, f.code): f.message for f in proj.analyze("data_factory.py")}
    assert "the step loop at exp.py:22 iterates it every epoch" in found[(6, "TT304")]
    assert "step loop at exp.py:22" in found[(6, "TT303")]
    assert not [key for key in found if key[0] == 11]  # the probe loader: its wrapper returns only the dataset


def test_a_factory_that_returns_the_dataloader_call_itself_is_followed() -> None:
    """``return DataLoader(...)`` names no variable: the loader is still the one the caller's epoch loop
    iterates; a factory that returns a loader iterated once stays quiet."""
    files = {
        "data.py": textwrap.dedent("""
            import torch


            def get_train_dataloader(p, dataset):
                return torch.utils.data.DataLoader(dataset, num_workers=8, batch_size=p["batch_size"], shuffle=True)


            def get_probe_dataloader(dataset):
                return torch.utils.data.DataLoader(dataset, num_workers=8, batch_size=4)
        """).lstrip("\n"),
        "train.py": textwrap.dedent("""
            import torch
            from data import get_train_dataloader, get_probe_dataloader

            model = torch.nn.Linear(8, 2).cuda()
            loader = get_train_dataloader(p, train_set)
            probe = get_probe_dataloader(val_set)
            shapes = [x.shape for x, _ in probe]
            for epoch in range(100):
                for x, y in loader:
                    loss = model(x.cuda(non_blocking=True)).sum()
                    loss.backward()
        """).lstrip("\n"),
    }
    proj = Project((path, path, text) for path, text in files.items())
    found = {(f.span.line, f.code): f.message for f in proj.analyze("data.py")}
    assert "`get_train_dataloader` returns it to train.py:5" in found[(5, "TT304")]
    assert (9, "TT304") not in found


def test_a_loader_handed_to_a_class_that_keeps_it_and_iterates_it_every_epoch() -> None:
    """``Solver(config, train_loader, valid_loader)`` keeps the loaders (``self.train_loader = train_loader``) and a
    method iterates one in a step loop inside an epoch loop; a loader it keeps and never iterates stays quiet."""
    files = {
        "data_loader.py": textwrap.dedent("""
            from torch.utils import data


            def get_loader(image_path, batch_size, num_workers=2):
                dataset = ImageFolder(root=image_path)
                data_loader = data.DataLoader(dataset=dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers)
                return data_loader
        """).lstrip("\n"),
        "solver.py": textwrap.dedent("""
            import torch


            class Solver:
                def __init__(self, config, train_loader, test_loader):
                    self.train_loader = train_loader
                    self.test_loader = test_loader
                    self.net = torch.nn.Linear(8, 2).cuda()
                    self.optimizer = torch.optim.Adam(self.net.parameters(), fused=True)

                def train(self):
                    for epoch in range(100):
                        for i, (images, gt) in enumerate(self.train_loader):
                            loss = self.net(images.cuda(non_blocking=True)).sum()
                            loss.backward()
                            self.optimizer.step()
        """).lstrip("\n"),
        "main.py": textwrap.dedent("""
            from data_loader import get_loader
            from solver import Solver

            train_loader = get_loader("train/", 16, num_workers=4)
            test_loader = get_loader("test/", 16, num_workers=4)
            solver = Solver(config, train_loader, test_loader)
            solver.train()
        """).lstrip("\n"),
    }
    proj = Project((path, path, text) for path, text in files.items())
    found = {(f.span.line, f.code): f.message for f in proj.analyze("data_loader.py")}
    assert "the step loop at solver.py:13 iterates it every epoch" in found[(6, "TT304")]
    assert len([key for key in found if key[1] == "TT304"]) == 1  # one finding for the call both loaders come from
