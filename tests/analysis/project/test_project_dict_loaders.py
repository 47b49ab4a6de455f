"""Issue 25: loaders kept in a dict (``loaders = {"train": DataLoader(...), "test": DataLoader(...)}``) and handed
entry by entry to another file's epoch functions (``utils.train_epoch(loaders["train"], ...)``), which iterate
them: each entry's workers restart every epoch (TT304).  An invented project, no code of any labelled
repository; an entry handed once, outside the epoch loop, is the look-alike that stays quiet."""

from __future__ import annotations

from project_support import assert_views_match, project_of
from torchtriage.analysis.project.program import Project

UTILS = """
    import torch


    def train_epoch(loader, model, optimizer):
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def evaluate(loader, model):
        with torch.no_grad():
            for x, y in loader:
                model(x.cuda(non_blocking=True))
"""
TRAIN = """
    import torch
    from torch.utils.data import DataLoader
    import utils

    model = torch.nn.Linear(8, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    loaders = {
        "train": DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True),
        "test": DataLoader(test_set, batch_size=32, num_workers=4, pin_memory=True),
        "final": DataLoader(final_set, batch_size=32, num_workers=4, pin_memory=True),
    }
    for epoch in range(100):
        utils.train_epoch(loaders["train"], model, optimizer)
        utils.evaluate(loaders["test"], model)
    utils.evaluate(loaders["final"], model)
"""
FILES = {"utils.py": UTILS, "train.py": TRAIN}


def project() -> Project:
    return project_of(FILES)


def test_each_entry_handed_to_another_files_epoch_function_restarts_its_workers() -> None:
    found = {(f.span.line, f.code) for f in project().analyze("train.py")}
    assert {(8, "TT304"), (9, "TT304")} <= found
    assert (10, "TT304") not in found  # handed once, after the epochs


def test_the_language_servers_view_gives_the_same_findings() -> None:
    assert_views_match(project(), FILES)
