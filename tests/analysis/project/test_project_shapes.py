"""Issue 12 shapes that span files, from held-out training repositories: invented multi-file
projects, each with negative look-alikes that must stay quiet.  No code of those repositories."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project


def project(files: dict[str, str]) -> Project:
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def lines(proj: Project, path: str, code: str) -> set[int]:
    return {f.span.line for f in proj.analyze(path) if f.code == code}


def test_per_batch_host_copies_in_an_evaluator_class_reached_from_the_validation_loop():
    proj = project(
        {
            "engine.py": """
                import torch
                from metrics.evaluator import DetEvaluator

                @torch.no_grad()
                def evaluate(model, loader, device):
                    evaluator = DetEvaluator(("bbox",))
                    for images, targets in loader:
                        outputs = model(images.to(device))
                        res = {t["id"]: o for t, o in zip(targets, outputs)}
                        evaluator.update(res)
                    evaluator.summarize()
            """,
            "main.py": """
                import torch
                from engine import evaluate
                evaluate(model, loader, torch.device("cuda"))
            """,
            "metrics/evaluator.py": """
                import torch

                def to_xywh(boxes):
                    x0, y0, x1, y1 = boxes.unbind(1)
                    return torch.stack((x0, y0, x1 - x0, y1 - y0), dim=1)

                class DetEvaluator:
                    def __init__(self, kinds):
                        self.kinds = kinds
                        self.results = []

                    def update(self, predictions):
                        for kind in self.kinds:
                            self.results.extend(self.prepare(predictions, kind))

                    def prepare(self, predictions, kind):
                        if kind == "bbox":
                            return self.prepare_boxes(predictions)
                        return []

                    def prepare_boxes(self, predictions):
                        rows = []
                        for image_id, prediction in predictions.items():
                            boxes = to_xywh(prediction["boxes"]).tolist()
                            scores = prediction["scores"].tolist()
                            rows.append((image_id, boxes, scores))
                        return rows

                    def summarize(self):
                        table = torch.tensor([r[2] for r in self.results])
                        return table.mean().tolist()
            """,
        }
    )
    assert lines(proj, "metrics/evaluator.py", "TT101") == {24, 25}  # not summarize(), once after the loop


def test_a_buffer_read_by_a_module_forward_called_from_another_file():
    proj = project(
        {
            "builder.py": """
                import torch
                from torch import nn

                class Queue(nn.Module):
                    def __init__(self, size=4096):
                        super().__init__()
                        self.size = size
                        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

                    def forward(self, keys):
                        self._enqueue(keys)
                        return keys.sum()

                    def _enqueue(self, keys):
                        ptr = int(self.queue_ptr)
                        limit = int(self.size)
                        self.queue_ptr[0] = (ptr + keys.shape[0]) % limit
            """,
            "main.py": """
                import torch
                import builder
                model = builder.Queue().cuda()
                for x in loader:
                    loss = model(x.cuda(non_blocking=True))
                    loss.backward(); opt.step()
            """,
        }
    )
    assert lines(proj, "builder.py", "TT101") == {15}  # not line 16: self.size is a Python int


DIST_UTIL = """
    import torch as th

    def dev():
        if th.cuda.is_available():
            return th.device("cuda")
        return th.device("cpu")

    def rank():
        return 0
"""


def test_a_project_device_function_makes_its_callers_cuda_code():
    proj = project(
        {
            "util/dist_util.py": DIST_UTIL,
            "train.py": """
                from util import dist_util
                def step(data):
                    batch, extra = next(data)
                    labels = extra["y"].to(dist_util.dev())
                    batch = batch.to(dist_util.dev())
                    loss = model(batch, labels)
                    loss.backward()
                for it in range(1000):
                    step(loader_iter)
                    opt.step()
            """,
            "other.py": """
                from util import dist_util
                r = dist_util.rank()
                for x, y in loader:
                    x = x.to(device)
                    loss = model(x, y)
                    loss.backward(); opt.step()
            """,
        }
    )
    assert lines(proj, "train.py", "TT301") == {4, 5}
    assert lines(proj, "other.py", "TT301") == set()  # calls a project function, not a device function
    view = proj.view("train.py")
    assert view is not None and view.device_call == "util/dist_util.py:3"


def test_a_setup_function_that_sets_the_device_on_the_options_makes_its_callers_cuda_code():
    # issue 25: ``default_setup(args)`` in another file writes ``args.device = "cuda"``; the script reads args.device
    proj = project(
        {
            "utils/setup.py": """
                import torch

                def default_setup(args):
                    if torch.cuda.is_available():
                        args.device = "cuda"
                    else:
                        args.device = "cpu"

                def log_setup(args):
                    args.log_dir = "cuda_logs"
            """,
            "train.py": """
                import torch
                from utils.setup import default_setup
                def main(args):
                    default_setup(args)
                    device = torch.device(args.device)
                    for images, targets in loader:
                        images = images.to(device)
                        loss = model(images, targets)
                        loss.backward(); opt.step()
            """,
            "eval.py": """
                import torch
                from utils.setup import log_setup
                def main(args):
                    log_setup(args)
                    device = torch.device(args.device)
                    for images, targets in loader:
                        images = images.to(device)
                        loss = model(images, targets)
                        loss.backward(); opt.step()
            """,
        }
    )
    assert lines(proj, "train.py", "TT301") == {7}
    assert lines(proj, "eval.py", "TT301") == set()  # a setup function that sets no device
    view = proj.view("train.py")
    assert view is not None and view.device_call == "utils/setup.py:3"


def test_a_loop_that_fetches_a_batch_and_hands_it_to_a_training_method_is_a_step_loop():
    proj = project(
        {
            "fp16.py": """
                import torch as th

                class MixedPrecision:
                    def __init__(self, params):
                        self.params = list(params)

                    def optimize(self, opt):
                        norm = self._norms()
                        opt.step()
                        return norm

                    def _norms(self):
                        total = 0.0
                        for p in self.params:
                            total += th.norm(p.grad).item() ** 2
                        return total

                    def report(self):
                        return [th.norm(p).item() for p in self.params]
            """,
            "trainer.py": """
                import torch as th
                from fp16 import MixedPrecision

                class TrainLoop:
                    def __init__(self, model, data):
                        self.model = model.cuda()
                        self.data = data
                        self.mp = MixedPrecision(self.model.parameters())
                        self.opt = th.optim.AdamW(self.model.parameters(), fused=True)

                    def run_loop(self):
                        while True:
                            batch, cond = next(self.data)
                            self.run_step(batch, cond)

                    def run_step(self, batch, cond):
                        self.forward_backward(batch, cond)
                        self.mp.optimize(self.opt)

                    def forward_backward(self, batch, cond):
                        for i in range(0, batch.shape[0], 4):
                            micro = batch[i : i + 4].cuda()
                            loss = self.model(micro).mean()
                            loss.backward()

                    def summary(self):
                        return self.mp.report()
            """,
        }
    )
    assert lines(proj, "fp16.py", "TT101") == {15}  # not report(), which no step calls
    assert lines(proj, "trainer.py", "TT301") == {22}


def test_a_distinctive_method_of_a_sampler_whose_class_is_not_known_is_followed():
    proj = project(
        {
            "samplers.py": """
                import torch

                class Uniform:
                    def sample(self, n, device):
                        return torch.randint(0, 1000, (n,), device=device)

                class LossAware(Uniform):
                    def update_with_local_losses(self, ts, losses):
                        values = [x.item() for x in losses]
                        self.history = values

                    def update(self, losses):
                        self.last = losses.item()
            """,
            "train.py": """
                import torch
                from samplers import Uniform

                class Loop:
                    def __init__(self, model, sampler=None):
                        self.model = model.cuda()
                        self.sampler = sampler or Uniform()

                    def fit(self, loader):
                        for x in loader:
                            x = x.cuda(non_blocking=True)
                            t = self.sampler.sample(x.shape[0], x.device)
                            losses = self.model(x, t)
                            self.sampler.update_with_local_losses(t, losses.detach())
                            self.sampler.update(losses.detach())
                            losses.mean().backward()
            """,
        }
    )
    assert lines(proj, "samplers.py", "TT101") == {9}  # `update` is too common a name to follow


def test_collate_helpers_reached_only_while_exporting_are_not_data_code():
    proj = project(
        {
            "util/misc.py": """
                from typing import List

                import torch
                import torchvision
                from torch import Tensor

                def collate_fn(batch):
                    batch = list(zip(*batch))
                    batch[0] = pad_images(batch[0])
                    return tuple(batch)

                def pad_images(images: List[Tensor]) -> Tensor:
                    if torchvision._is_tracing():
                        return _export_pad(images)
                    max_h = max([img.shape[1] for img in images])
                    out = torch.zeros(len(images), 3, max_h, max_h)
                    for img, slot in zip(images, out):
                        slot[:, : img.shape[1], : img.shape[2]].copy_(img)
                    return out

                def _export_pad(images: List[Tensor]) -> Tensor:
                    padded = []
                    for img in images:
                        padded.append(torch.nn.functional.pad(img, (0, 1)))
                    return torch.stack(padded)
            """,
            "main.py": """
                import torch
                import util.misc as utils
                loader = torch.utils.data.DataLoader(ds, batch_size=2, collate_fn=utils.collate_fn, num_workers=2)
            """,
        }
    )
    assert lines(proj, "util/misc.py", "TT306") == {15, 17}  # not _export_pad's loop (line 23)


def test_a_helper_called_under_a_modulo_helper_guard_in_another_file_is_not_hot():
    proj = project(
        {
            "fid.py": """
                import torch

                class FID:
                    def __init__(self, net):
                        self.net = net

                    def features(self, x):
                        return self.net(x).cpu()

                    def score(self, batches):
                        feats = [self.net(b) for b in batches]
                        return torch.cat(feats).cpu().numpy()
            """,
            "trainer.py": """
                import torch
                from fid import FID

                def divisible_by(numer, denom):
                    return (numer % denom) == 0

                class Trainer:
                    def __init__(self, model, net):
                        self.model = model.cuda()
                        self.fid = FID(net)

                    def train(self, dl):
                        step = 0
                        while step < 1000:
                            x = next(dl).cuda(non_blocking=True)
                            loss = self.model(x)
                            loss.backward()
                            step += 1
                            feats = self.fid.features(x)
                            if divisible_by(step, 500):
                                print(self.fid.score([x]))
            """,
        }
    )
    assert lines(proj, "fid.py", "TT101") == {8}  # not score(): it runs every 500 steps


def test_a_library_trainers_train_step_called_in_another_files_loop_runs_every_step():
    proj = project(
        {
            "lib/trainer.py": """
                import torch

                class Trainer:
                    def __init__(self, model, every=1000):
                        self.model = model
                        self.opt = torch.optim.Adam(model.parameters(), fused=True)
                        self.steps = torch.zeros(1, device="cuda")
                        self.every = every

                    def train_step(self, batch):
                        loss = self.model(batch)
                        loss.backward()
                        self.update()
                        return loss.item()

                    def update(self):
                        self.opt.step()
                        self.opt.zero_grad()
                        self.steps += 1
                        total = int(self.steps.item())
                        if total % self.every:
                            return
                        self.save(int(self.steps.item()))

                    def save(self, n):
                        torch.save(self.steps.cpu(), f"ckpt-{n}.pt")

                def train_one_epoch(trainer, loader):
                    for batch in loader:
                        trainer.train_step(batch.cuda(non_blocking=True))
                    return trainer.steps.cpu()
            """,
            "cli.py": """
                from lib.trainer import Trainer, train_one_epoch
                trainer = Trainer(net)
                trainer = trainer.cuda()
                for _ in range(num_steps):
                    print(trainer.train_step(next(batches)))
                for epoch in range(3):
                    train_one_epoch(trainer, loader)
            """,
        }
    )
    # train_step (line 14) and update (line 20) run every step; the save after the early return
    # and train_one_epoch's summary after its own loop do not.
    assert lines(proj, "lib/trainer.py", "TT101") == {14, 20}
    (read,) = [f for f in proj.analyze("lib/trainer.py") if f.code == "TT101" and f.span.line == 14]
    assert read.extra["hot_path"] == ["cli.py:5"]


def test_per_step_shapes_inside_an_engine_driven_by_another_file():
    proj = project(
        {
            "engine.py": """
                import time
                import torch

                to_np = lambda t: t.detach().cpu().numpy()

                class Engine:
                    def __init__(self, model):
                        self.model = model
                        self.last = time.time()

                    def train_one_epoch(self, loader, opt):
                        scores = []
                        for x, y in loader:
                            out = self.model(x.cuda(non_blocking=True))
                            loss = (out - y.cuda(non_blocking=True)).pow(2).mean()
                            loss.backward(); opt.step()
                            scores.append(to_np(out))
                            now = time.time()
                            self.step_time = now - self.last
                            self.last = now
                        return to_np(loss)

                    def evaluate(self, loader):
                        t0 = time.time()
                        for x, y in loader:
                            x = x.cuda(non_blocking=True)
                        return time.time() - t0
            """,
            "main.py": """
                import torch
                from engine import Engine
                engine = Engine(torch.nn.Linear(4, 4).cuda())
                for epoch in range(10):
                    engine.train_one_epoch(loader, opt)
                    engine.evaluate(val_loader)
            """,
        }
    )
    assert lines(proj, "engine.py", "TT101") == {4}  # the lambda, called per step (and once after the loop)
    assert lines(proj, "engine.py", "TT402") == {18}  # not evaluate(): no CUDA work between its reads


def test_a_data_module_whose_generator_re_iterates_its_loader():
    proj = project(
        {
            "data.py": """
                from torch.utils.data import DataLoader

                def load_data(ds, batch_size):
                    loader = DataLoader(ds, batch_size=batch_size, num_workers=4)
                    while True:
                        yield from loader

                def load_eval(ds, batch_size):
                    loader = DataLoader(ds, batch_size=batch_size, num_workers=4)
                    yield from loader
            """,
            "train.py": """
                import torch
                from data import load_data, load_eval
                data = load_data(train_set, 64)
                model = torch.nn.Linear(4, 4).cuda()
                for step in range(1000):
                    batch = next(data)
                    loss = model(batch.cuda(non_blocking=True)).sum()
                    loss.backward(); opt.step()
            """,
        }
    )
    assert lines(proj, "data.py", "TT304") == {4}  # load_eval goes over its loader once


def test_a_model_reassigned_from_itself_keeps_the_class_built_into_it_earlier_in_the_scope():
    """``classifier = classifier.train()`` in each of two scripts that build different models into the
    name: each step loop runs its own model's ``forward`` (the project-wide name alone is ambiguous)."""
    proj = project(
        {
            "model.py": """
                import torch
                import torch.nn as nn

                class Cls(nn.Module):
                    def forward(self, x):
                        scale = x.sum().item()
                        return x * scale

                class Seg(nn.Module):
                    def forward(self, x):
                        return x

                class Unused(nn.Module):
                    def forward(self, x):
                        return x * x.max().item()
            """,
            "train_cls.py": """
                from model import Cls, Unused
                classifier = Unused()
                classifier = Cls()
                for x in loader:
                    classifier = classifier.train()
                    classifier(x.cuda()).sum().backward()
            """,
            "train_seg.py": """
                from model import Seg
                classifier = Seg()
                for x in loader:
                    classifier = classifier.train()
                    classifier(x.cuda()).sum().backward()
            """,
        }
    )
    assert lines(proj, "model.py", "TT101") == {6}  # Cls.forward; not Unused's, replaced before the loop


def test_a_device_variable_of_a_cuda_config_imported_by_name_or_through_star_imports_makes_its_users_cuda_code():
    """``device = torch.device("cuda:0" if ...)`` in conf.py; train.py gets it by ``from data import *``
    (data.py: ``from conf import *``), tools.py by name; a file that imports the module but never reads its
    device, and one that imports a non-device name, stay off CUDA."""
    proj = project(
        {
            "conf.py": """
                import torch
                device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
                batch_size = 128
            """,
            "data.py": """
                from conf import *
                loader = make_loader(batch_size)
            """,
            "train.py": """
                from torch.optim import Adam
                from data import *
                model = Net().to(device)
                optimizer = Adam(model.parameters(), lr=1e-4)
                for x, y in loader:
                    loss = model(x.to(device)).sum(); loss.backward(); optimizer.step()
            """,
            "tools.py": """
                from torch.optim import Adam
                from conf import device
                model = Net().to(device)
                optimizer = Adam(model.parameters(), lr=1e-4)
                for x, y in loader:
                    loss = model(x.to(device)).sum(); loss.backward(); optimizer.step()
            """,
            "sizes.py": """
                from torch.optim import Adam
                from conf import batch_size
                model = Net()
                optimizer = Adam(model.parameters(), lr=1e-4)
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """,
        }
    )
    assert lines(proj, "train.py", "TT503") == {4}
    assert lines(proj, "tools.py", "TT503") == {4}
    assert lines(proj, "sizes.py", "TT503") == set()
    assert proj.view("train.py").device_call == "conf.py:2"
