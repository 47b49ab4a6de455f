"""The project model: invented multi-file projects, each with negative look-alikes.

Shapes from real training repositories (step loop in ``engine.py``, loss and matcher
in ``models/``, box utilities and metric helpers in ``util/``, device and knobs in the
entry script's argparse); the code is written for these tests.
"""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project, module_name
from torchtriage.config import Settings


def project(files: dict[str, str], settings: Settings | None = None) -> Project:
    return Project(((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items()), settings)


def found(proj: Project, path: str, code: str | None = None) -> list:
    return [f for f in proj.analyze(path) if code is None or f.code == code]


def lines(proj: Project, path: str, code: str) -> set[int]:
    return {f.span.line for f in found(proj, path, code)}


ENGINE = """
    import torch
    import util.misc as utils
    from util.box_ops import box_iou

    def train_one_epoch(model, criterion, data_loader, optimizer, device):
        for samples, targets in data_loader:
            samples = samples.to(device)
            outputs = model(samples)
            loss = criterion(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            stats = utils.reduce_dict({"loss": loss})
        return utils.summarize(stats)

    @torch.no_grad()
    def evaluate(model, data_loader, metric):
        for images, labels in data_loader:
            out = model(images)
            metric.update(out, labels)
        return metric.compute()
"""

MAIN = """
    import argparse
    import torch
    from engine import train_one_epoch, evaluate
    from models import build_model
    from util.metrics import Accuracy

    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    device = torch.device(args.device)
    model, criterion = build_model(args)
    metric = Accuracy()
    for epoch in range(10):
        train_one_epoch(model, criterion, loader, optimizer, device)
        evaluate(model, val_loader, metric)
"""

MODELS_INIT = """
    from .detr import build as build_model
"""

DETR = """
    import torch
    from torch import nn
    from .matcher import build_matcher
    from util import box_ops

    class DETR(nn.Module):
        def forward(self, x):
            return x

        def describe(self, x):
            assert (x > 0).all()

    class SetCriterion(nn.Module):
        def __init__(self, matcher):
            super().__init__()
            self.matcher = matcher

        def forward(self, outputs, targets):
            indices = self.matcher(outputs, targets)
            giou = box_ops.generalized_box_iou(outputs, targets)
            return outputs.sum()

    def build(args):
        matcher = build_matcher(args)
        criterion = SetCriterion(matcher)
        model = DETR()
        assert (torch.ones(1) > 0).all()
        return model, criterion
"""

MATCHER = """
    import torch
    from torch import nn

    class HungarianMatcher(nn.Module):
        @torch.no_grad()
        def forward(self, outputs, targets):
            cost = outputs.cpu()
            return cost

    def build_matcher(args):
        return HungarianMatcher()

    def unused(x):
        return x.item()
"""

BOX_OPS = """
    import torch

    def generalized_box_iou(boxes1, boxes2):
        assert (boxes1[:, 2:] >= boxes1[:, :2]).all()
        return boxes1

    def box_iou(a, b):
        return a

    def never_called(boxes):
        assert (boxes >= 0).all()
"""

MISC = """
    import torch

    def reduce_dict(d):
        return {k: v.item() for k, v in d.items()}

    def summarize(stats):
        return {k: v.item() for k, v in stats.items()}
"""

METRICS = """
    import torch

    class Accuracy:
        def __init__(self):
            self.preds = []

        def update(self, out, labels):
            self.preds.append(out.argmax(1).cpu().numpy())

        def compute(self):
            total = torch.cat(self.all).sum().item()
            return total
"""


def detr_like() -> Project:
    return project(
        {
            "main.py": MAIN,
            "engine.py": ENGINE,
            "models/__init__.py": MODELS_INIT,
            "models/detr.py": DETR,
            "models/matcher.py": MATCHER,
            "util/__init__.py": "",
            "util/box_ops.py": BOX_OPS,
            "util/misc.py": MISC,
            "util/metrics.py": METRICS,
        }
    )


def test_module_names():
    assert module_name("pkg/sub/mod.py") == "pkg.sub.mod"
    assert module_name("pkg/__init__.py") == "pkg"


def test_function_called_per_step_from_another_file_is_hot_and_names_the_path():
    proj = detr_like()
    (finding,) = found(proj, "util/misc.py", "TT101")
    assert finding.span.line == 4  # reduce_dict, called in the step loop
    assert finding.extra["hot_path"] == ["engine.py:13"]
    assert "Runs every step: called from engine.py:13." in finding.message
    assert finding.to_json()["hot_path"] == ["engine.py:13"]
    # summarize() is called once after the loop: quiet.
    assert 7 not in lines(proj, "util/misc.py", "TT101")


def test_loss_module_forward_and_its_matcher_through_a_factory_are_hot():
    proj = detr_like()
    (matcher,) = found(proj, "models/matcher.py", "TT101")
    assert matcher.span.line == 7
    assert matcher.extra["hot_path"] == ["engine.py:9", "models/detr.py:19"]
    assert "engine.py:9 → models/detr.py:19" in matcher.message
    # a function of the matcher file nobody calls per step stays quiet
    assert 14 not in lines(proj, "models/matcher.py", "TT101")


def test_module_alias_callee_is_hot_and_uncalled_neighbours_are_not():
    proj = detr_like()
    assert lines(proj, "util/box_ops.py", "TT103") == {4}
    # build() runs once: its assert is not per step; DETR.describe is never called per step
    assert lines(proj, "models/detr.py", "TT103") == set()


def test_per_batch_host_copy_in_a_validation_helper_is_hot_but_compute_after_the_loop_is_not():
    proj = detr_like()
    assert lines(proj, "util/metrics.py", "TT101") == {8}


def test_device_from_the_entry_scripts_argparse_default_reaches_the_engine():
    proj = detr_like()
    (copy,) = found(proj, "engine.py", "TT301")
    assert copy.span.line == 7
    assert copy.extra["device_from"] == "main.py"
    assert "CUDA is used by main.py" in copy.message


def test_no_cuda_anywhere_keeps_cuda_rules_quiet():
    cpu_main = MAIN.replace('default="cuda"', 'default="cpu"')
    proj = project({"main.py": cpu_main, "engine.py": ENGINE})
    assert found(proj, "engine.py", "TT301") == []
    # and the engine alone, without the project, is quiet too
    alone = project({"engine.py": ENGINE})
    assert found(alone, "engine.py", "TT301") == []


def test_a_cuda_file_that_does_not_import_the_engine_gives_it_no_device():
    proj = project({"main.py": MAIN.replace("from engine import train_one_epoch, evaluate\n", ""), "engine.py": ENGINE})
    assert found(proj, "engine.py", "TT301") == []


def test_test_files_do_not_make_project_code_hot():
    proj = project(
        {
            "test_misc.py": """
                from util.misc import reduce_dict


                def test_reduce_dict_in_a_loop():
                    for batch in loader:
                        loss = model(batch); loss.backward(); opt.step()
                        reduce_dict({"loss": loss})
            """,
            "util/misc.py": MISC,
        }
    )
    assert found(proj, "util/misc.py", "TT101") == []


def test_a_training_script_named_like_a_test_but_holding_no_test_is_training_code():
    """``pmnist_test.py``, the experiment on permuted MNIST: no test function, TestCase or test framework."""
    proj = project(
        {
            "pmnist_test.py": """
                from util.misc import reduce_dict


                def test():
                    return 0


                for batch in loader:
                    loss = model(batch); loss.backward(); opt.step()
                    reduce_dict({"loss": loss})
            """,
            "util/misc.py": MISC,
        }
    )
    assert found(proj, "util/misc.py", "TT101") != []


def test_a_smoke_script_in_a_tests_folder_is_a_test_though_it_trains():
    """``test/test_las.py``: a model run ten steps on random inputs to see that it learns (kospeech's shape).
    The same file beside the training code is training code, as ``pmnist_test.py`` above."""
    smoke = """
        import torch
        device = torch.device("cuda")
        model = Net().to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        for i in range(10):
            inputs = torch.rand(3, 80).to(device)
            loss = model(inputs).sum()
            loss.backward()
            optimizer.step()
            print(loss)
    """
    assert found(project({"test/test_las.py": smoke}), "test/test_las.py") == []
    assert found(project({"tests/unit/train_test.py": smoke}), "tests/unit/train_test.py") == []
    beside = found(project({"bin/test_las.py": smoke}), "bin/test_las.py")
    assert {"TT102", "TT305", "TT503"} <= {f.code for f in beside}


def test_same_named_function_in_another_module_is_not_confused():
    proj = project(
        {
            "train.py": """
                import torch
                from helpers import log_loss
                for x, y in loader:
                    loss = model(x); loss.backward(); opt.step()
                    log_loss(loss)
            """,
            "helpers.py": """
                def log_loss(loss):
                    print(loss.item())
            """,
            "other.py": """
                def log_loss(loss):
                    print(loss.item())
            """,
        }
    )
    assert lines(proj, "helpers.py", "TT102") == {2}
    assert found(proj, "other.py") == []


NUM_WORKERS_CONFIG = """
    from dataclasses import dataclass
    NUM_WORKERS = 0

    @dataclass
    class TrainConfig:
        workers: int = 6
"""

NUM_WORKERS_TRAIN = """
    import argparse
    from torch.utils.data import DataLoader
    from config import NUM_WORKERS, TrainConfig

    parser = argparse.ArgumentParser()
    parser.add_argument("--num-workers", default=4, type=int)
    args = parser.parse_args()
    cfg = TrainConfig()
    a = DataLoader(ds, num_workers=args.num_workers)
    b = DataLoader(ds, num_workers=NUM_WORKERS)
    c = DataLoader(ds, num_workers=cfg.workers)
    d = DataLoader(ds, num_workers=args.unknown_knob)
    for epoch in range(3):
        for x, y in a:
            loss = model(x); loss.backward(); opt.step()
        for x, y in b:
            loss = model(x); loss.backward(); opt.step()
        for x, y in c:
            loss = model(x); loss.backward(); opt.step()
        for x, y in d:
            loss = model(x); loss.backward(); opt.step()
"""


def test_num_workers_from_argparse_default_constant_and_config_class_with_value_in_message():
    proj = project({"config.py": NUM_WORKERS_CONFIG, "train.py": NUM_WORKERS_TRAIN})
    persistent = {f.span.line: f.message for f in found(proj, "train.py", "TT304")}
    assert set(persistent) == {9, 11}
    assert "`args.num_workers` is 4: the `--num-workers` default (train.py:6)" in persistent[9]
    assert "`cfg.workers` is 6: the `TrainConfig.workers` default (config.py:6)" in persistent[11]
    (no_workers,) = found(proj, "train.py", "TT302")
    assert no_workers.span.line == 10
    assert "`NUM_WORKERS` is 0" in no_workers.message
    # args.unknown_knob (line 12) has no default anywhere: unknown, quiet for both rules


def test_a_files_own_parser_wins_and_conflicting_defaults_elsewhere_stay_unknown():
    other = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--num-workers", default=0)\n'
    proj = project({"config.py": NUM_WORKERS_CONFIG, "train.py": NUM_WORKERS_TRAIN, "eval.py": other})
    assert 9 in lines(proj, "train.py", "TT304")  # train.py's own --num-workers default (4)
    data = """
        from torch.utils.data import DataLoader

        def make_loader(args, ds):
            return DataLoader(ds, num_workers=args.num_workers)
    """
    first = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--num_workers", default=4)\n'
    proj = project({"data.py": data, "a.py": first, "b.py": other})
    assert found(proj, "data.py", "TT302") == []  # 4 in a.py, 0 in b.py: unknown
    proj = project({"data.py": data, "b.py": other})
    (no_workers,) = found(proj, "data.py", "TT302")
    assert "the `--num-workers` default (b.py:3)" in no_workers.message


def test_store_true_flag_defaults_to_false():
    proj = project(
        {
            "train.py": """
                import argparse
                import torch
                from torch.utils.data import DataLoader
                parser = argparse.ArgumentParser()
                parser.add_argument("--pin-mem", action="store_true")
                args = parser.parse_args()
                loader = DataLoader(ds, num_workers=4, pin_memory=args.pin_mem, persistent_workers=True)
                for x, y in loader:
                    x = x.cuda(non_blocking=True)
                    loss = model(x); loss.backward(); opt.step()
            """
        }
    )
    assert lines(proj, "train.py", "TT303") == {7}


def test_single_file_results_are_unchanged_by_the_project_model():
    from torchtriage.analysis import analyze_source

    source = textwrap.dedent(ENGINE).lstrip("\n")
    alone = project({"engine.py": ENGINE})
    assert [(f.code, f.span, f.message) for f in alone.analyze("engine.py")] == [
        (f.code, f.span, f.message) for f in analyze_source(source, "engine.py")
    ]


def _detr_files() -> dict[str, str]:
    return {
        "main.py": MAIN, "engine.py": ENGINE, "models/__init__.py": MODELS_INIT, "models/detr.py": DETR,
        "models/matcher.py": MATCHER, "util/__init__.py": "", "util/box_ops.py": BOX_OPS,
        "util/misc.py": MISC, "util/metrics.py": METRICS,
    }


def _key(findings: list) -> list:
    return [(f.code, f.span, f.message, f.extra) for f in findings]


def test_a_view_applied_to_the_incremental_analyzer_gives_the_project_analysis():
    from torchtriage.analysis.engine import IncrementalAnalyzer

    proj = detr_like()
    for path, text in _detr_files().items():
        source = textwrap.dedent(text).lstrip("\n")
        assert _key(IncrementalAnalyzer(path).analyze(source, project=proj.view(path))) == _key(proj.analyze(path))


def test_random_edits_with_the_project_index_match_a_fresh_project_analysis():
    import random

    from torchtriage.analysis.engine import IncrementalAnalyzer

    rng = random.Random(12)
    files = {p: textwrap.dedent(t).lstrip("\n") for p, t in _detr_files().items()}
    analyzers = {p: IncrementalAnalyzer(p) for p in files}
    cache: dict = {}
    snippets = ["        print(loss.item())\n", "    x = 1\n", "\n", "def extra(v):\n    return v.item()\n", "  (\n"]
    for _ in range(40):
        path = rng.choice(["engine.py", "models/detr.py", "util/misc.py", "util/box_ops.py"])
        lines = files[path].splitlines(keepends=True)
        where = rng.randrange(len(lines) + 1)
        if rng.random() < 0.3 and lines:
            del lines[min(where, len(lines) - 1)]
        else:
            lines.insert(where, rng.choice(snippets))
        files[path] = "".join(lines)
        proj = Project((p, p, t) for p, t in files.items())
        # the language server's index re-parses only changed files: same views
        cached = Project(((p, p, t) for p, t in files.items()), parse_cache=cache)
        for name in files:
            view = proj.view(name)
            assert cached.view(name) == view
            assert _key(analyzers[name].analyze(files[name], project=view)) == _key(proj.analyze(name)), (path, name)


LOADER_MAIN = """
    import argparse
    import torch
    from torch.utils.data import DataLoader
    from engine import train_one_epoch, evaluate, summarize

    parser = argparse.ArgumentParser()
    parser.add_argument("--num_workers", default=2, type=int)
    args = parser.parse_args()
    device = torch.device("cuda")
    train_loader = DataLoader(train_set, batch_size=8, num_workers=args.num_workers)
    val_loader = DataLoader(val_set, batch_size=8, num_workers=args.num_workers, pin_memory=True, persistent_workers=True)
    once_loader = DataLoader(val_set, batch_size=8, num_workers=args.num_workers)
    for epoch in range(10):
        train_one_epoch(model, train_loader, optimizer, device)
        evaluate(model, val_loader)
    summarize(model, once_loader)
"""

LOADER_ENGINE = """
    import torch

    def train_one_epoch(model, data_loader, optimizer, device):
        for samples, targets in logger.log_every(data_loader, 10):
            samples = samples.to(device, non_blocking=True)
            loss = model(samples).sum()
            loss.backward()
            optimizer.step()

    @torch.no_grad()
    def evaluate(model, loader):
        for images, labels in loader:
            out = model(images)

    @torch.no_grad()
    def summarize(model, loader):
        for images, labels in loader:
            out = model(images)
"""


def test_loader_iterated_per_epoch_by_another_files_step_loop_gets_pinning_and_persistence_advice():
    proj = project({"main.py": LOADER_MAIN, "engine.py": LOADER_ENGINE})
    pin = {f.span.line: f.message for f in found(proj, "main.py", "TT303")}
    assert set(pin) == {10}  # val_loader pins already; once_loader's batches are never moved
    assert "step loop at engine.py:4" in pin[10]
    persistent = {f.span.line: f.message for f in found(proj, "main.py", "TT304")}
    assert set(persistent) == {10}  # once_loader is read once, after the epoch loop
    assert "`args.num_workers` is 2: the `--num_workers` default (main.py:7)" in persistent[10]
    assert "iterated by the step loop at engine.py:4, called once per epoch" in persistent[10]
    # without the project, main.py alone cannot tell that the batches are moved (no pinning advice); that the
    # loaders handed to a function every epoch are iterated every epoch it still sees, without naming the loop
    alone = project({"main.py": LOADER_MAIN})
    assert found(alone, "main.py", "TT303") == []
    persistent = {f.span.line: f.message for f in found(alone, "main.py", "TT304")}
    assert set(persistent) == {10}
    assert "handed to `train_one_epoch` in the epoch loop at line 13, every epoch" in persistent[10]


def test_optimizer_of_a_script_whose_training_loop_lives_in_another_file_gets_the_fused_hint():
    main = LOADER_MAIN.replace(
        "    for epoch in range(10):",
        "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\n    for epoch in range(10):",
    )
    proj = project({"main.py": main, "engine.py": LOADER_ENGINE})
    assert lines(proj, "main.py", "TT503") == {13}
    # a script that only evaluates through the other file gets no hint
    evaluating = main.replace("        train_one_epoch(model, train_loader, optimizer, device)\n", "")
    proj = project({"main.py": evaluating, "engine.py": LOADER_ENGINE})
    assert found(proj, "main.py", "TT503") == []


def test_shapes_and_starred_sizes_passed_to_another_files_helper_are_not_batch_data():
    proj = project(
        {
            "train.py": """
                import torch
                from aug import cutmix_bbox, Erasing
                erase = Erasing()
                for x, y in loader:
                    x = x.cuda(non_blocking=True)
                    box = cutmix_bbox(x.shape, 0.5)
                    x = erase(x)
                    loss = model(x).sum()
                    loss.backward()
                    opt.step()
            """,
            "aug.py": """
                import torch

                def cutmix_bbox(img_shape, lam):
                    img_h, img_w = img_shape[-2:]
                    return int(img_h * lam), int(img_w * lam)

                class Erasing:
                    def _erase(self, img, chan, img_h, img_w, dtype):
                        if img_w > 4 and img_h > 4:
                            img[:, :2, :2] = 0

                    def __call__(self, input):
                        self._erase(input, *input.size(), input.dtype)
                        return input
            """,
        }
    )
    assert found(proj, "aug.py") == []


def test_set_defaults_wins_over_conflicting_flag_defaults():
    source = """
        import argparse
        import torch
        from torch.utils.data import DataLoader
        parser = argparse.ArgumentParser()
        parser.add_argument("--pin-mem", action="store_true")
        parser.add_argument("--no-pin-mem", action="store_false", dest="pin_mem")
        parser.set_defaults(pin_mem={value})
        args = parser.parse_args()
        loader = DataLoader(ds, num_workers=4, pin_memory=args.pin_mem, persistent_workers=True)
        for x, y in loader:
            x = x.cuda(non_blocking=True)
            loss = model(x).sum(); loss.backward(); opt.step()
    """
    assert lines(project({"train.py": source.replace("{value}", "True")}), "train.py", "TT303") == set()
    (pin,) = found(project({"train.py": source.replace("{value}", "False")}), "train.py", "TT303")
    assert pin.span.line == 9
    assert "`args.pin_mem` is False: `set_defaults(pin_mem=...)` (train.py:7)" in pin.message


LOGGER = """
    import torch

    class MetricLogger:
        def __init__(self):
            self.meters = {}

        def update(self, **kwargs):
            for k, v in kwargs.items():
                if isinstance(v, torch.Tensor):
                    v = v.item()
                self.meters[k] = v
"""


def test_a_tensor_check_in_a_logger_fires_only_when_a_step_tensor_reaches_it():
    floats = """
        import torch
        from logger import MetricLogger
        metric_logger = MetricLogger()
        for x, y in loader:
            loss = model(x).sum()
            loss.backward()
            opt.step()
            loss_value = loss.item()
            metric_logger.update(loss=loss_value, lr=opt.param_groups[0]["lr"])
            metric_logger.update(acc=loss.item())
    """
    proj = project({"train.py": floats, "logger.py": LOGGER})
    assert found(proj, "logger.py", "TT101") == []
    tensors = floats.replace('metric_logger.update(acc=loss.item())', 'metric_logger.update(**{"loss": loss})')
    proj = project({"train.py": tensors, "logger.py": LOGGER})
    assert lines(proj, "logger.py", "TT101") == {10}


def test_a_step_loop_whose_backward_runs_in_another_files_callable_trains():
    files = {
        "main.py": """
            import torch
            from engine import train_one_epoch
            from misc import NativeScaler
            device = torch.device("cuda")
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
            loss_scaler = NativeScaler()
            for epoch in range(3):
                train_one_epoch(model, loader, optimizer, loss_scaler)
        """,
        "engine.py": """
            import torch

            def train_one_epoch(model, data_loader, optimizer, loss_scaler):
                for samples, targets in data_loader:
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        loss = model(samples).sum()
                    loss_scaler(loss, optimizer)
        """,
        "misc.py": """
            class NativeScaler:
                def __call__(self, loss, optimizer):
                    loss.backward()
                    optimizer.step()
        """,
    }
    assert lines(project(files), "main.py", "TT503") == {5}
    files["misc.py"] = "class NativeScaler:\n    def __call__(self, loss, optimizer):\n        return loss\n"
    assert found(project(files), "main.py", "TT503") == []


def test_a_name_from_a_star_import_of_a_project_module_is_that_modules_function():
    """``from utils import *`` (tutorial code): ``accuracy(scores, targets)`` is utils.accuracy, run every step;
    a module whose ``__all__`` leaves a name out does not give it."""
    utils = """
        import torch

        __all__ = ["accuracy"]


        def accuracy(scores, targets):
            correct = scores.argmax(1).eq(targets).float().sum()
            return correct.item()


        def unlisted(scores):
            return scores.sum().item()
    """
    train = """
        import torch
        from utils import *

        model = torch.nn.Linear(4, 2).cuda()
        for x, y in loader:
            scores = model(x.cuda(non_blocking=True))
            loss = scores.sum()
            loss.backward()
            top1 = accuracy(scores, y)
            other = unlisted(scores)
    """
    proj = project({"utils.py": utils, "train.py": train})
    assert [f.span.line for f in found(proj, "utils.py", "TT101")] == [8]


def test_a_timing_closed_after_an_imported_function_that_reads_losses_is_synchronised():
    """``t0 = time.time(); train_epoch(...); evaluate(...); time.time() - t0``: ``evaluate`` (another file)
    sums ``loss.item()``, so the device is waited for before the read; one that reads nothing is not."""
    engine = """
        import torch


        def evaluate(model, loader):
            total = 0.0
            for x, y in loader:
                total += torch.nn.functional.mse_loss(model(x.cuda()), y.cuda()).item()
            return total


        def forward_only(model, loader):
            for x, _ in loader:
                model(x.cuda())
    """
    main = """
        import time
        import torch
        from engine import evaluate, forward_only

        model = torch.nn.Linear(4, 1).cuda()
        for epoch in range(10):
            start = time.time()
            model(torch.randn(8, 4, device="cuda")).sum().backward()
            CALL
            epoch_time = time.time() - start
    """
    synced = project({"engine.py": engine, "main.py": main.replace("CALL", "val = evaluate(model, val_loader)")})
    assert found(synced, "main.py", "TT402") == []
    assert synced.view("main.py").syncing_imports == frozenset({"evaluate"})
    queued = project({"engine.py": engine, "main.py": main.replace("CALL", "forward_only(model, val_loader)")})
    assert [f.span.line for f in found(queued, "main.py", "TT402")] == [10]
