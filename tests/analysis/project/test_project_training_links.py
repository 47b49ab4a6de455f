"""Issue 25: training that happens in another file's method or factory.  An invented project, no code
of any labelled repository: an RL script whose loop runs ``agent.train(buffer)`` of one of two agent
classes chosen by a flag, and an optimizer factory that a training script calls.  Look-alikes that stay
quiet: a factory that also offers a fused optimizer, an epoch loop around a function with its own step
loop, and a factory no training file calls."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.project.program import Project

AGENTS = """
    import torch
    from torch import nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    class Critic(nn.Module):
        def forward(self, s, a):
            return self.net(torch.cat([s, a], 1))


    class TwinAgent:
        def __init__(self, dim):
            self.critic = Critic().to(device)
            self.optimizer = torch.optim.Adam(self.critic.parameters(), lr=3e-4)

        def train(self, buffer, batch_size=256):
            state, action, reward = buffer.sample(batch_size)
            loss = (self.critic(state, action) - reward).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


    class PlainAgent:
        def __init__(self, dim):
            self.critic = Critic().to(device)
            self.optimizer = torch.optim.Adam(self.critic.parameters(), lr=1e-3)

        def train(self, buffer, batch_size=256):
            state, action, reward = buffer.sample(batch_size)
            loss = (self.critic(state, action) - reward).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""
MAIN = """
    import argparse
    import numpy as np
    import agents
    from replay import Buffer

    parser = argparse.ArgumentParser()
    parser.add_argument("--agent", default="twin")
    args = parser.parse_args()

    if args.agent == "twin":
        agent = agents.TwinAgent(8)
    elif args.agent == "plain":
        agent = agents.PlainAgent(8)
    buffer = Buffer()
    state = env.reset()
    for t in range(1_000_000):
        action = env.action_space.sample()
        state, reward, done, _ = env.step(action)
        buffer.add(state, action, reward)
        if t >= 1000:
            agent.train(buffer)
"""
REPLAY = """
    import numpy as np


    class Buffer:
        def add(self, *row):
            self.rows.append(row)

        def sample(self, n):
            return self.rows[:n]
"""
OPTIM = """
    import torch
    from apex.optimizers import FusedAdam


    def get_optimizer(cfg, model):
        if cfg.OPTIMIZER == "sgd":
            return torch.optim.SGD(model.parameters(), lr=cfg.LR, momentum=0.9)
        return torch.optim.AdamW(model.parameters(), lr=cfg.LR)


    def build_with_choice(cfg, model):
        if cfg.OPTIMIZER == "fused_adam":
            return FusedAdam(model.parameters(), lr=cfg.LR)
        return torch.optim.AdamW(model.parameters(), lr=cfg.LR)


    def unused_optimizer(model):
        return torch.optim.Adam(model.parameters())
"""
TRAIN = """
    import torch
    from engine import train_one_epoch
    from optim import build_with_choice, get_optimizer

    model = torch.nn.Linear(8, 2).cuda()
    optimizer = get_optimizer(cfg, model)
    other = build_with_choice(cfg, model)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        pass
    for epoch in range(90):
        train_one_epoch(model, loader, optimizer)
"""
ENGINE = """
    import torch


    def train_one_epoch(model, loader, optimizer):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def project(files: dict[str, str]) -> Project:
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def rl_project() -> Project:
    return project({"agents.py": AGENTS, "main.py": MAIN, "replay.py": REPLAY})


def test_every_agent_a_flag_chooses_trains_and_the_loop_that_runs_it_is_a_training_loop() -> None:
    proj = rl_project()
    agents = {(f.span.line, f.code) for f in proj.analyze("agents.py")}
    assert (15, "TT503") in agents and (28, "TT503") in agents  # both branches' classes step their optimizers
    main = {(f.span.line, f.code): f for f in proj.analyze("main.py")}
    finding = main[(16, "TT504")]  # the env-step loop: the training step is agent.train(), in agents.py
    assert finding.extra["device_from"] == "agents.py"
    assert "CUDA is used by agents.py, whose training step this file runs." in finding.message


def test_the_language_servers_view_gives_the_same_findings() -> None:
    proj = rl_project()
    source = textwrap.dedent(MAIN).lstrip("\n")
    got = IncrementalAnalyzer("main.py").analyze(source, project=proj.view("main.py"))
    assert [(f.code, f.span, f.message) for f in got] == [(f.code, f.span, f.message) for f in proj.analyze("main.py")]
    assert proj.view("main.py").training_loops == frozenset({16})


def test_an_optimizer_factory_a_training_file_calls_builds_the_trainings_optimizer() -> None:
    proj = project({"optim.py": OPTIM, "train.py": TRAIN, "engine.py": ENGINE})
    found = {(f.span.line, f.code) for f in proj.analyze("optim.py")}
    assert {(7, "TT503"), (8, "TT503")} <= found  # get_optimizer: SGD and AdamW, neither fused
    assert (14, "TT503") not in found  # build_with_choice offers FusedAdam by a flag
    assert (18, "TT503") not in found  # no training file calls unused_optimizer
    assert proj.view("optim.py").trainer_calls == frozenset({"get_optimizer", "build_with_choice"})


def test_an_epoch_loop_around_a_function_with_its_own_step_loop_is_not_the_training_loop() -> None:
    proj = project({"optim.py": OPTIM, "train.py": TRAIN.replace('    with torch.autocast("cuda", dtype=torch.bfloat16):\n        pass\n', ""),
                    "engine.py": ENGINE})
    assert not [f for f in proj.analyze("train.py") if f.code == "TT504"]  # the epoch loop: not reported
    assert [f.span.line for f in proj.analyze("engine.py") if f.code == "TT504"] == [5]  # the step loop is


def test_a_name_annotated_with_a_project_class_holds_one() -> None:
    """``stepper: steps.Stepper = stepper_arg`` (or a parameter ``stepper: Stepper``): its methods are that
    class's, so the loop that calls ``stepper.step_once(batch)`` trains, and the class's optimizer is stepped."""
    steps = """
        import torch


        class Stepper:
            def __init__(self, model):
                self.model = model
                self.opt = torch.optim.Adam(model.parameters())

            def step_once(self, x):
                loss = self.model(x.cuda(non_blocking=True)).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
    """
    procedure = """
        import steps


        def train_epoch(batches, stepper_arg):
            stepper: steps.Stepper = stepper_arg
            for x in batches:
                stepper.step_once(x)


        def train_typed(batches, stepper: steps.Stepper):
            for x in batches:
                stepper.step_once(x)
    """
    proj = project({"steps.py": steps, "procedure.py": procedure})
    assert (7, "TT503") in {(f.span.line, f.code) for f in proj.analyze("steps.py")}
    assert proj.view("procedure.py").training_loops == frozenset({6, 11})


def test_a_subclass_of_a_project_class_that_keeps_a_cuda_device_runs_on_it() -> None:
    """``class ExpMain(ExpBasic)`` where ``ExpBasic.__init__`` sets ``self.device = torch.device("cuda:0")``
    in another file: the subclass's copies to ``self.device`` are CUDA copies (TT301) though its own text
    never says cuda."""
    basic = """
        import torch


        class ExpBasic:
            def __init__(self, args):
                self.device = torch.device("cuda:{}".format(args.gpu)) if args.use_gpu else torch.device("cpu")
    """
    main = """
        from exp.basic import ExpBasic


        class ExpMain(ExpBasic):
            def train(self, loader):
                for x, y in loader:
                    x = x.float().to(self.device)
                    loss = self.criterion(self.model(x), y.to(self.device))
                    loss.backward()
                    self.optimizer.step()
    """
    proj = project({"exp/__init__.py": "", "exp/basic.py": basic, "exp/main.py": main})
    found = [(f.span.line, f.code) for f in proj.analyze("exp/main.py") if f.code == "TT301"]
    assert found == [(7, "TT301"), (8, "TT301")]
    assert proj.view("exp/main.py").device_call == "exp/basic.py:4"


RUNNER = """
    import torch


    class Runner:
        def __init__(self, model, optimizer, loaders):
            self.model, self.optimizer = model, optimizer
            self.loaders = loaders

        def fit(self, epochs):
            for epoch in range(epochs):
                self._one_pass(self.loaders["train"])

        def _one_pass(self, loader):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(self.model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

        def evaluate(self, loader):
            for x, y in loader:
                self.model(x.cuda(non_blocking=True))
"""
SCRIPT = """
    import torch
    from runner import Runner

    model = torch.nn.Linear(8, 1).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    runner = Runner(model, opt, {"train": loader})
    runner.fit(90)
"""


def test_a_method_of_an_object_made_from_another_files_class_runs_the_training_loop() -> None:
    """``runner = Runner(...); runner.fit(90)``: ``fit``'s own loop only counts epochs; the step loop is in
    ``self._one_pass``, one call down. The script builds the training's optimizer (TT503 there)."""
    proj = project({"runner.py": RUNNER, "script.py": SCRIPT})
    assert proj.view("script.py").trains_via == "runner.py:14"
    assert [(f.span.line, f.code) for f in proj.analyze("script.py") if f.code == "TT503"] == [(5, "TT503")]


def test_an_object_whose_methods_never_step_an_optimizer_does_not_make_the_script_train() -> None:
    script = SCRIPT.replace("runner.fit(90)", "runner.evaluate(loader)")
    proj = project({"runner.py": RUNNER, "script.py": script})
    view = proj.view("script.py")
    assert view is None or view.trains_via is None
    assert not [f for f in proj.analyze("script.py") if f.code == "TT503"]


def test_a_class_picked_by_name_from_its_files_globals_may_be_any_class_there() -> None:
    """``algorithm_class = algorithms.get_algorithm_class(args.algorithm)`` returning ``globals()[name]``: the
    loop's ``algorithm.update(batch)`` runs the ``update`` of whichever class the option names."""
    algorithms = """
        import torch


        def get_algorithm_class(name):
            if name not in globals():
                raise NotImplementedError(name)
            return globals()[name]


        class Plain(torch.nn.Module):
            def update(self, x, y):
                loss = torch.nn.functional.cross_entropy(self.net(x), y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return {"loss": loss.item()}


        class Penalised(Plain):
            def update(self, x, y):
                loss = torch.nn.functional.cross_entropy(self.net(x), y) + self.penalty()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return {"loss": loss.item(), "penalty": self.penalty().item()}


        class Helper:
            def describe(self):
                return "not an algorithm"
    """
    train = """
        import torch
        import algorithms

        algorithm_class = algorithms.get_algorithm_class(args.algorithm)
        algorithm = algorithm_class(hparams)
        algorithm.cuda()
        for x, y in loader:
            algorithm.update(x.cuda(non_blocking=True), y.cuda(non_blocking=True))
    """
    proj = project({"algorithms.py": algorithms, "train.py": train})
    lines = sorted(f.span.line for f in proj.analyze("algorithms.py") if f.code == "TT101")
    assert lines == [16, 25, 25]


def test_a_lightning_module_s_optimizer_factory_in_another_file_builds_the_trainings_optimizer() -> None:
    """Lightning runs ``training_step``'s backward and step: the file trains, so the factory its
    ``configure_optimizers`` calls builds the training's optimizer; ``Trainer(gpus=...)`` trains on CUDA."""
    utils = """
        import torch


        def get_optimizer(hparams, model):
            return torch.optim.Adam(model.parameters(), lr=hparams.lr)
    """
    train = """
        from pytorch_lightning import LightningModule, Trainer
        from utils import get_optimizer


        class System(LightningModule):
            def configure_optimizers(self):
                return get_optimizer(self.hparams, self.model)

            def training_step(self, batch, batch_nb):
                return self.model(batch).mean()


        Trainer(gpus=1, max_epochs=16).fit(System())
    """
    proj = project({"utils.py": utils, "train.py": train})
    assert [(f.span.line, f.code) for f in proj.analyze("utils.py") if f.code == "TT503"] == [(5, "TT503")]


ALGORITHMS = """
    import torch


    class ERM:
        def __init__(self, model):
            self.model = model.cuda()
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)

        def update(self, minibatches):
            x = torch.cat([x for x, _ in minibatches])
            y = torch.cat([y for _, y in minibatches])
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return {"loss": loss.item()}
"""
SWEEP = """
    import torch
    import algorithms

    algorithm = algorithms.ERM(torch.nn.Linear(8, 2))
    iterator = iter(loader)
    for step in range(5000):
        minibatches = [(x.to("cuda"), y.to("cuda")) for x, y in next(iterator)]
        step_vals = algorithm.update(minibatches)
        if step % 300 == 0:
            print(step_vals)
"""


def test_a_loop_whose_pass_is_another_files_training_step_is_a_step_loop() -> None:
    """Nothing in the script's own loop trains, but each pass runs ``ERM.update``: the loop is a step
    loop, so its own per-step code (the batches' copies) is reported, and the language server's view
    says the same."""
    proj = project({"algorithms.py": ALGORITHMS, "sweep.py": SWEEP})
    sweep = {(f.span.line, f.code) for f in proj.analyze("sweep.py")}
    assert (7, "TT301") in sweep  # the copies in the comprehension, every step
    assert proj.view("sweep.py").step_loops == frozenset({6})
    algorithms = {(f.span.line, f.code) for f in proj.analyze("algorithms.py")}
    assert (16, "TT101") in algorithms  # update() runs every step
    got = IncrementalAnalyzer("sweep.py").analyze(textwrap.dedent(SWEEP).lstrip("\n"), project=proj.view("sweep.py"))
    assert [(f.code, f.span) for f in got] == [(f.code, f.span) for f in proj.analyze("sweep.py")]


def test_a_loop_that_trains_through_a_helper_re_exported_by_a_package_is_no_evaluation_loop() -> None:
    """``model.train(); for batch_idx in tqdm(lib.make_random_batches(...)): lib.train_step(optimizer, lambda x:
    loss_fn(apply_model("train", x), Y[x]), batch_idx)``, with
    ``train_step`` (backward and the optimizer's step) in ``lib/deep.py`` and re-exported by ``lib/__init__.py``'s
    ``from .deep import *``: the loop trains elsewhere, so TT501 leaves it alone even though the file's evaluation
    helper calls ``model.eval()``; the validation loop after it, with autograd on, is still reported."""
    from project_support import assert_views_match, project_of

    files = {
        "lib/__init__.py": """
            from .deep import *  # noqa
        """,
        "lib/deep.py": """
            import torch


            def make_random_batches(size, batch_size, device):
                return torch.randperm(size, device=device).split(batch_size)


            def train_step(optimizer, step_fn, batch):
                optimizer.zero_grad()
                loss = step_fn(batch)
                loss.backward()
                optimizer.step()
                return loss
        """,
        "bin/train.py": """
            import torch
            from tqdm import tqdm
            import lib


            def main(X, Y, val_loader):
                model = torch.nn.Linear(8, 2).cuda()
                optimizer = torch.optim.AdamW(model.parameters(), fused=True)

                def apply_model(part, idx):
                    return model(X[part][idx])

                @torch.inference_mode()
                def evaluate(batches):
                    model.eval()
                    return [apply_model("val", idx) for idx in batches]

                for epoch in range(10):
                    model.train()
                    for batch_idx in tqdm(lib.make_random_batches(len(X), 256, "cuda")):
                        loss = lib.train_step(optimizer, lambda x: loss_fn(apply_model("train", x), Y[x]), batch_idx)
                    model.eval()
                    for x, y in val_loader:
                        prediction = model(x.cuda(non_blocking=True))
        """,
    }
    proj = project_of(files)
    assert proj.context("bin/train.py").training_loops == frozenset({20})  # type: ignore[union-attr]
    assert {(f.span.line, f.code) for f in proj.analyze("bin/train.py") if f.code == "TT501"} == {(23, "TT501")}
    assert_views_match(proj, files)
