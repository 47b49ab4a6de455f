"""Issue 25: a trainer base class whose step loop calls an abstract method (``metrics = self.calculate_metrics(batch)``)
runs each subclass's implementation every step, in whatever file it is.  An invented project, no code of any
labelled repository.

``base.py``'s ``Trainer.validate`` loops over the validation loader and calls ``self.calculate_metrics(batch)``,
declared with ``@abstractmethod``; ``ranking.py``'s ``RankingTrainer`` implements it with a host read per batch
(TT101) through a helper of ``metrics.py``; ``ClassifierTrainer`` implements ``calculate_loss`` (left with
``raise NotImplementedError`` in the base) with another.  ``self.debug(batch)``, a hook called for its effect, is
not followed: its implementation's host read stays alone."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

BASE = """
    from abc import ABCMeta, abstractmethod

    import torch


    class Trainer(metaclass=ABCMeta):
        def __init__(self, model, train_loader, val_loader, optimizer):
            self.model = model.cuda()
            self.train_loader, self.val_loader, self.optimizer = train_loader, val_loader, optimizer

        @abstractmethod
        def calculate_metrics(self, batch):
            pass

        def calculate_loss(self, batch):
            raise NotImplementedError

        def debug(self, batch):
            pass

        def train(self, epochs):
            for epoch in range(epochs):
                for batch in self.train_loader:
                    batch = [x.cuda(non_blocking=True) for x in batch]
                    loss = self.calculate_loss(batch)
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                    self.debug(batch)
                self.validate()

        def validate(self):
            with torch.no_grad():
                for batch in self.val_loader:
                    batch = [x.cuda(non_blocking=True) for x in batch]
                    metrics = self.calculate_metrics(batch)
"""
METRICS = """
    import torch


    def recall_at(scores, labels, k):
        hits = labels.float().gather(1, (-scores).argsort(dim=1)[:, :k])
        return (hits.sum(1) / labels.sum(1).float()).mean().item()
"""
RANKING = """
    import torch
    import torch.nn.functional as F

    from base import Trainer
    from metrics import recall_at


    class RankingTrainer(Trainer):
        def calculate_metrics(self, batch):
            seqs, labels = batch
            return {"recall@10": recall_at(self.model(seqs), labels, 10)}

        def calculate_loss(self, batch):
            seqs, labels = batch
            return F.cross_entropy(self.model(seqs), labels)


    class ClassifierTrainer(Trainer):
        def calculate_metrics(self, batch):
            x, y = batch
            return {"acc": (self.model(x).argmax(1) == y).float().mean()}

        def calculate_loss(self, batch):
            x, y = batch
            loss = F.cross_entropy(self.model(x), y)
            self.last = loss.item()
            return loss

        def debug(self, batch):
            x, y = batch
            print(self.model(x).max().item())
"""
FILES = {"base.py": BASE, "metrics.py": METRICS, "ranking.py": RANKING}


def project() -> Project:
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in FILES.items())


def test_the_subclasses_implementation_of_an_abstract_step_method_runs_every_step() -> None:
    solved = project()
    assert (6, "TT101") in {(f.span.line, f.code) for f in solved.analyze("metrics.py")}  # through RankingTrainer
    found = {(f.span.line, f.code) for f in solved.analyze("ranking.py")}
    assert (26, "TT101") in found  # ClassifierTrainer.calculate_loss: the base left it raising NotImplementedError
    assert not any(line == 31 for line, _ in found)  # debug(): a hook called for its effect, not followed


# A model base class declares ``calc_loss`` abstract; a subclass of it writes the fit loop that calls
# ``self.calc_loss(batch)``; the concrete models, subclasses of that one in another file, implement it.
RECOMMENDER = """
    import torch
    from torch import nn


    class Recommender(nn.Module):
        def calc_loss(self, batch):
            raise NotImplementedError


    class GeneralRecommender(Recommender):
        def fit(self, loader):
            self.to("cuda")
            optimizer = torch.optim.Adam(self.parameters(), fused=True)
            for batch in loader:
                loss = self.calc_loss(batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""
MF = """
    from torch import nn

    from recommender import GeneralRecommender


    class MF(GeneralRecommender):
        def __init__(self, users, items):
            super().__init__()
            self.user, self.item = nn.Embedding(users, 8), nn.Embedding(items, 8)

        def calc_loss(self, batch):
            user = batch[0].to("cuda")
            item = batch[1].to("cuda")
            return -(self.user(user) * self.item(item)).sum(-1).sigmoid().log().mean()
"""


def test_an_inherited_abstract_step_method_runs_the_subclasses_implementation() -> None:
    files = {"recommender.py": RECOMMENDER, "mf.py": MF}
    solved = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    found = {(f.span.line, f.code) for f in solved.analyze("mf.py")}
    assert {(12, "TT301"), (13, "TT301")} <= found  # MF.calc_loss copies the batch every step of the base's fit loop


# A trainer base class gives ``train_step`` a default body and loops over it; the subclasses, in another file,
# override it.  Each override runs every step; a hook whose result is not used (``self.log_step()``) is not followed.
DEFAULT_BASE = """
    import torch


    class Trainer:
        def __init__(self, model, optimizer, get_batch):
            self.model, self.optimizer, self.get_batch = model.cuda(), optimizer, get_batch

        def train_iteration(self, num_steps):
            losses = []
            for _ in range(num_steps):
                losses.append(self.train_step())
                self.log_step()
            return losses

        def train_step(self):
            x, y = self.get_batch()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return loss.detach()

        def log_step(self):
            pass
"""
DEFAULT_SUBCLASSES = """
    import torch

    from trainer import Trainer


    class SequenceTrainer(Trainer):
        def train_step(self):
            x, y = self.get_batch()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return loss.detach().cpu().item()

        def log_step(self):
            print(self.model.weight.sum().item())
"""


def test_a_subclass_override_of_a_default_step_method_runs_every_step() -> None:
    files = {"trainer.py": DEFAULT_BASE, "seq_trainer.py": DEFAULT_SUBCLASSES}
    solved = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    found = {(f.span.line, f.code) for f in solved.analyze("seq_trainer.py")}
    assert (13, "TT101") in found  # SequenceTrainer.train_step, called by the base's step loop
    assert not any(line == 16 for line, _ in found)  # log_step(): a hook called for its effect, not followed
