"""TT504 and the precision another file chooses: a library file's training loop (``utils/train_utils.py``'s
``train(model, loader, ...)``) runs the model its caller built, in the caller's precision (FSDP's
``MixedPrecision``, an AMP flag), also when the caller imports it through a package's re-exports
(``from utils import train``).  Invented projects, no code of any labelled repository; a caller that
chooses no precision is the look-alike that keeps the finding."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.project.program import Project

TRAIN_UTILS = """
    import torch


    def train(model, loader, optimizer, rank):
        for batch in loader:
            batch = {k: v.to(rank, non_blocking=True) for k, v in batch.items()}
            loss = model(**batch).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
INIT = "from .train_utils import train\n"
MAIN_BF16 = """
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
    from utils import train

    torch.cuda.set_device(rank)
    policy = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16)
    model = FSDP(build_model(), mixed_precision=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    for epoch in range(10):
        train(model, loader, optimizer, rank)
"""
MAIN_FP32 = """
    import torch
    from utils import train

    torch.cuda.set_device(rank)
    model = build_model().to(rank)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    for epoch in range(10):
        train(model, loader, optimizer, rank)
"""


def project(main: str) -> Project:
    files = {"utils/__init__.py": INIT, "utils/train_utils.py": TRAIN_UTILS, "main.py": main}
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def test_a_library_loop_runs_in_the_precision_its_importer_chooses() -> None:
    proj = project(MAIN_BF16)
    assert "TT504" not in {f.code for f in proj.analyze("utils/train_utils.py")}
    assert proj.view("utils/train_utils.py").precision_from == "main.py"  # type: ignore[union-attr]


def test_an_importer_that_chooses_no_precision_leaves_the_fp32_loop_reported() -> None:
    proj = project(MAIN_FP32)
    assert (5, "TT504") in {(f.span.line, f.code) for f in proj.analyze("utils/train_utils.py")}  # CUDA by set_device


def test_the_language_servers_view_gives_the_same_findings() -> None:
    for main in (MAIN_BF16, MAIN_FP32):
        proj = project(main)
        text = textwrap.dedent(TRAIN_UTILS).lstrip("\n")
        alone = IncrementalAnalyzer("utils/train_utils.py").analyze(text, project=proj.view("utils/train_utils.py"))
        assert {(f.span.line, f.code) for f in alone} == {(f.span.line, f.code) for f in proj.analyze("utils/train_utils.py")}


BUILDER_FP16 = """
    import torch


    def build_model():
        torch.set_default_tensor_type(torch.cuda.HalfTensor)
        model = Transformer()
        torch.set_default_tensor_type(torch.FloatTensor)
        return model
"""


def test_a_loop_runs_the_model_its_importers_builder_makes_in_half_precision() -> None:
    """``main.py`` chooses nothing itself, but the builder it imports makes half precision the default dtype
    while the model is built: the library loop runs an fp16 model (the look-alike is MAIN_FP32 above)."""
    main = MAIN_FP32.replace("    from utils import train\n", "    from utils import train\n    from builder import build_model\n")
    files = {"utils/__init__.py": INIT, "utils/train_utils.py": TRAIN_UTILS, "main.py": main, "builder.py": BUILDER_FP16}
    proj = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    assert "TT504" not in {f.code for f in proj.analyze("utils/train_utils.py")}
    assert proj.view("utils/train_utils.py").precision_from == "main.py"  # type: ignore[union-attr]


def test_an_amp_flag_the_importer_only_defines_chooses_for_the_experiments_that_read_it() -> None:
    """``run.py`` defines ``--use_amp`` and hands ``args`` to the experiment it picks; ``exp_forecast.py`` reads the
    flag (autocast and a scaler when set), ``exp_classify.py`` never does and trains in fp32: TT504 there only.
    An importer that reads its flag itself (``if args.fp16: model.half()``) still chooses for what it imports."""
    from project_support import assert_views_match, project_of

    experiment = """
        import torch


        class Exp:
            def __init__(self, args):
                self.args = args
                self.model = build(args).to(torch.device("cuda"))
                self.optimizer = torch.optim.Adam(self.model.parameters(), fused=True)

            def train(self, loader):
                for x, y in loader:
                    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                    {forward}
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
    """
    files = {
        "exp_forecast.py": experiment.replace("{forward}", """with torch.autocast("cuda", enabled=self.args.use_amp):
                        loss = criterion(self.model(x), y)"""),
        "exp_classify.py": experiment.replace("{forward}", "loss = criterion(self.model(x), y)"),
        "run.py": """
            import argparse
            from exp_classify import Exp as Classify
            from exp_forecast import Exp as Forecast

            parser = argparse.ArgumentParser()
            parser.add_argument("--task", default="forecast")
            parser.add_argument("--use_amp", action="store_true", help="use automatic mixed precision", default=False)
            args = parser.parse_args()
            exp = {"forecast": Forecast, "classify": Classify}[args.task](args)
            exp.train(loader)
        """,
    }
    proj = project_of(files)
    assert {(f.span.line, f.code) for f in proj.analyze("exp_classify.py") if f.code == "TT504"} == {(11, "TT504")}
    assert "TT504" not in {f.code for f in proj.analyze("exp_forecast.py")}
    assert proj.context("exp_classify.py").precision_from is None  # type: ignore[union-attr]
    assert_views_match(proj, files)

    reads_flag = "args = parser.parse_args()\n            if args.use_amp:\n                torch.set_float32_matmul_precision('medium')"
    reading = dict(files, **{"run.py": files["run.py"].replace("args = parser.parse_args()", reads_flag)})
    assert project_of(reading).context("exp_classify.py").precision_from == "run.py"  # type: ignore[union-attr]
