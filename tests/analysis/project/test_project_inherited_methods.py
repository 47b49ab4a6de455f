"""Issue 25: a method a subclass inherits from a base class in another file runs on ``self`` too.  A few-shot
training loop in the base (``MetaTemplate.train_loop``) calls the abstract ``self.set_forward_loss(x)``; the
subclass's implementation (``protonet.py``) calls ``self.parse_feature(x)``, defined only in the base, which copies
the episode to the GPU every step (TT301).  An invented project, no code of any labelled repository; a base method
the subclass overrides itself is the look-alike: the base's own version never runs on it."""

from __future__ import annotations

from project_support import assert_views_match, project_of
from torchtriage.analysis.project.program import Project

TEMPLATE = """
    import torch
    from torch import nn
    from abc import abstractmethod


    class MetaTemplate(nn.Module):
        def __init__(self, model_func, n_way, n_support):
            super().__init__()
            self.n_way, self.n_support = n_way, n_support
            self.feature = model_func()

        @abstractmethod
        def set_forward_loss(self, x):
            pass

        def parse_feature(self, x):
            x = x.cuda()
            z_all = self.feature(x)
            return z_all[:, :self.n_support], z_all[:, self.n_support:]

        def embed(self, x):
            return self.feature(x.cuda())

        def train_loop(self, train_loader, optimizer):
            for x, _ in train_loader:
                optimizer.zero_grad()
                loss = self.set_forward_loss(x)
                loss.backward()
                optimizer.step()
"""
PROTONET = """
    import torch
    from methods.meta_template import MetaTemplate


    class ProtoNet(MetaTemplate):
        def set_forward_loss(self, x):
            z_support, z_query = self.parse_feature(x)
            e = self.embed(x)
            return ((z_query - z_support.mean(1)) ** 2).sum() + e.sum()

        def embed(self, x):
            return self.feature(x.cuda(non_blocking=True))
"""
TRAIN = """
    import torch
    from methods.protonet import ProtoNet

    model = ProtoNet(backbone, n_way=5, n_support=5).cuda()
    optimizer = torch.optim.Adam(model.parameters(), fused=True)
    for epoch in range(400):
        model.train_loop(base_loader, optimizer)
"""
FILES = {"methods/meta_template.py": TEMPLATE, "methods/protonet.py": PROTONET, "train.py": TRAIN}


def project() -> Project:
    return project_of(FILES)


def test_a_base_method_the_subclass_inherits_runs_every_step() -> None:
    found = {(f.span.line, f.code) for f in project().analyze("methods/meta_template.py")}
    assert (17, "TT301") in found  # parse_feature, inherited: reached through ProtoNet.set_forward_loss
    assert (22, "TT301") not in found  # embed: ProtoNet overrides it, so the base's version never runs here


def test_the_language_servers_view_gives_the_same_findings() -> None:
    assert_views_match(project(), FILES)
