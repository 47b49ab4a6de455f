"""Issue 25: loaders handed to a project class that keeps them (``solver = Solver(loader, config)``, whose
``__init__`` stores ``self.loader = loader``) and reads them in a step loop of its own methods: by ``for`` inside
an epoch loop (TT303 and TT304), or by ``next()`` from an iterator over a local bound to the attribute (TT303
only: nothing says the workers restart per epoch).  The script that makes the loaders never names CUDA; the
class's file does, and copies the batches there.  An invented project, no code of any labelled repository;
a kept loader no step loop reads, and one whose batches stay on the host, are the look-alikes that stay quiet."""

from __future__ import annotations

from project_support import assert_views_match, project_of

SOLVER = """
    import torch


    class Solver:
        def __init__(self, train_loader, valid_loader, config):
            self.train_loader = train_loader
            self.valid_loader = valid_loader
            self.net = torch.nn.Linear(8, 2).cuda()
            self.optimizer = torch.optim.Adam(self.net.parameters(), fused=True)

        def train(self, iterations):
            loader = self.train_loader if iterations else self.valid_loader
            batches = iter(loader)
            for step in range(iterations):
                try:
                    x, y = next(batches)
                except StopIteration:
                    batches = iter(loader)
                    x, y = next(batches)
                loss = self.net(x.to("cuda", non_blocking=True)).sum()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""
EPOCHS = """
    import torch


    class Trainer:
        def __init__(self, data, config):
            self.train_loader = data["train"]
            self.test_loader = data["test"]
            self.net = torch.nn.Linear(8, 2).cuda()
            self.optimizer = torch.optim.Adam(self.net.parameters(), fused=True)

        def fit(self, epochs):
            for epoch in range(epochs):
                for x, y in self.train_loader:
                    loss = self.net(x.cuda(non_blocking=True)).sum()
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
"""


def _codes(proj, path: str) -> set[tuple[int, str]]:  # type: ignore[no-untyped-def]
    return {(f.span.line, f.code) for f in proj.analyze(path) if f.code in ("TT303", "TT304")}


def test_a_loader_a_class_keeps_and_takes_batches_from_with_next() -> None:
    """``Solver(train_loader, ...)``, batches by ``next(iter(loader))`` where ``loader = self.train_loader if ...``:
    the script's loader is pinned-memory material (TT303, CUDA named by the class's file); no TT304."""
    files = {
        "solver.py": SOLVER,
        "main.py": """
            from torch.utils.data import DataLoader
            from solver import Solver

            train_loader = DataLoader(train_set, batch_size=16, shuffle=True, num_workers=4)
            valid_loader = DataLoader(valid_set, batch_size=16, num_workers=4, pin_memory=True)
            solver = Solver(train_loader, valid_loader, config)
            solver.train(1000)
        """,
    }
    proj = project_of(files)
    assert _codes(proj, "main.py") == {(4, "TT303")}
    finding = next(f for f in proj.analyze("main.py") if f.code == "TT303")
    assert "solver.py:14" in finding.message and "CUDA is used by solver.py" in finding.message
    assert finding.extra["device_from"] == "solver.py"
    assert_views_match(proj, files)


def test_a_factory_loader_handed_on_to_a_class_that_takes_batches_with_next() -> None:
    """``get_loader()`` returns the loader, the script hands it to ``Solver``: the factory's DataLoader call gets TT303."""
    files = {
        "solver.py": SOLVER,
        "data.py": """
            from torch.utils import data


            def get_loader(path, batch_size):
                loader = data.DataLoader(Folder(path), batch_size=batch_size, shuffle=True, num_workers=8)
                return loader
        """,
        "main.py": """
            from data import get_loader
            from solver import Solver

            loader = get_loader("images/", 16)
            Solver(loader, None, config).train(1000)
        """,
    }
    proj = project_of(files)
    assert _codes(proj, "data.py") == {(5, "TT303")}
    assert _codes(proj, "main.py") == set()
    assert_views_match(proj, files)


def test_loaders_handed_in_a_dict_and_iterated_every_epoch() -> None:
    """``Trainer({"train": train_loader, "test": test_loader})``, ``self.train_loader = data["train"]`` iterated by a
    ``for`` inside the epoch loop: TT303 and TT304 on the train loader; the test loader, kept but never read, is quiet."""
    files = {
        "trainer.py": EPOCHS,
        "main.py": """
            from torch.utils.data import DataLoader
            from trainer import Trainer

            train_loader = DataLoader(train_set, batch_size=16, shuffle=True, num_workers=4)
            test_loader = DataLoader(test_set, batch_size=16, num_workers=4)
            data = {"train": train_loader, "test": test_loader}
            Trainer(data, config).fit(10)
        """,
    }
    proj = project_of(files)
    assert _codes(proj, "main.py") == {(4, "TT303"), (4, "TT304")}
    assert_views_match(proj, files)


def test_a_kept_loader_whose_batches_stay_on_the_host_is_quiet() -> None:
    """The same hand-over to a class whose step loop never copies the batches to a device: no TT303, and the
    script is not taken to run on CUDA (the class's file names no device)."""
    files = {
        "solver.py": """
            import torch


            class Solver:
                def __init__(self, loader):
                    self.loader = loader
                    self.net = torch.nn.Linear(8, 2)
                    self.optimizer = torch.optim.Adam(self.net.parameters())

                def train(self, iterations):
                    batches = iter(self.loader)
                    for step in range(iterations):
                        x, y = next(batches)
                        loss = self.net(x).sum()
                        loss.backward()
                        self.optimizer.step()
        """,
        "main.py": """
            import torch
            from torch.utils.data import DataLoader
            from solver import Solver

            loader = DataLoader(train_set, batch_size=16, shuffle=True, num_workers=4)
            Solver(loader).train(1000)
        """,
    }
    proj = project_of(files)
    assert _codes(proj, "main.py") == set()
    assert proj.context("main.py").loaders_on_cuda_in is None  # type: ignore[union-attr]
    assert_views_match(proj, files)


def test_a_factory_loader_kept_on_self_and_iterated_through_a_progress_bar_every_epoch() -> None:
    """``self.train_loader = make_loader(...)`` in the trainer's ``__init__``, iterated as ``t = tqdm(self.train_loader)``
    inside the epoch loop of another method: the factory's DataLoader gets TT303 and TT304.  Kept under another
    attribute than the one the loop reads, it adds nothing."""
    files = {
        "loaders.py": """
            from torch.utils import data


            def make_loader(path, batch_size, num_workers=8):
                loader = data.DataLoader(Records(path), batch_size=batch_size, shuffle=True, num_workers=num_workers)
                return loader
        """,
        "framework.py": """
            import torch
            from tqdm import tqdm
            from loaders import make_loader


            class SentenceTrainer:
                def __init__(self, model, train_path, epochs):
                    self.train_loader = make_loader(train_path, 32)
                    self.model = model.cuda()
                    self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1, fused=True)
                    self.epochs = epochs

                def train_model(self):
                    for epoch in range(self.epochs):
                        t = tqdm(self.train_loader)
                        for step, (x, y) in enumerate(t):
                            loss = self.model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))
                            self.optimizer.zero_grad()
                            loss.backward()
                            self.optimizer.step()
        """,
    }
    proj = project_of(files)
    assert _codes(proj, "loaders.py") == {(5, "TT303"), (5, "TT304")}
    assert "framework.py:16 iterates it every epoch" in next(f.message for f in proj.analyze("loaders.py") if f.code == "TT304")
    assert_views_match(proj, files)

    elsewhere = dict(files, **{"framework.py": files["framework.py"].replace(
        "self.train_loader = make_loader(train_path, 32)", "self.loader = make_loader(train_path, 32)")})
    assert _codes(project_of(elsewhere), "loaders.py") == set()  # the loop reads another attribute
