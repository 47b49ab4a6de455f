"""Issue 25: a DataLoader over a project class that derives IterableDataset, imported from another file, is a
stream (TT302 asks no workers of it: each would replay the whole stream unless the dataset shards itself).
An invented project, no code of any labelled repository; the look-alike, a map-style dataset imported the
same way, keeps its finding."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

DATASETS = """
    import torch
    from torch.utils.data import Dataset, IterableDataset


    class ShardMix(IterableDataset):
        def __init__(self, shards):
            self.shards = shards

        def __iter__(self):
            for shard in self.shards:
                yield from shard


    class Tokens(Dataset):
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return torch.randint(0, 100, (64,))
"""
TRAIN = """
    import torch
    from torch.utils.data import DataLoader

    from data.datasets import ShardMix, Tokens


    def train(model, shards, optimizer):
        mixed = DataLoader(ShardMix(shards), batch_size=8)
        table = DataLoader(Tokens(1000), batch_size=8)
        for loader in (mixed, table):
            for batch in loader:
                loss = model(batch.cuda(non_blocking=True)).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""
FILES = {"data/__init__.py": "", "data/datasets.py": DATASETS, "train.py": TRAIN}


def test_a_loader_over_an_imported_iterable_dataset_asks_for_no_workers() -> None:
    proj = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in FILES.items())
    tt302 = {f.span.line for f in proj.analyze("train.py") if f.code == "TT302"}
    assert 8 not in tt302  # ShardMix: an IterableDataset from another file
    assert 9 in tt302  # Tokens: map-style, imported the same way
