"""Issue 25: a repository that trains also holds scripts that never do (prediction, export, benchmarks) and
library files with self-test ``__main__`` blocks; their loops are not training steps.  Invented multi-file
projects (no code of the labelled repositories), each with the look-alikes that must keep their findings:
the training files, a standalone evaluation driven by training, a project with no training at all, and the
language server's view of each file giving the project's findings."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.project.program import Project
from torchtriage.analysis.project.roles import AUXILIARY, AUXILIARY_SCRIPT

TRAIN = """
    import torch
    from torch.utils.data import DataLoader
    from data.images import ImageFolder
    from evaluate import evaluate
    from utils.bench import time_model

    def main():
        model = torch.nn.Linear(8, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(ImageFolder("train"), batch_size=32, num_workers=4, pin_memory=True)
        for epoch in range(10):
            for x, y in loader:
                x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                print(loss.item())
            evaluate(model, loader)
        time_model(model)

    if __name__ == "__main__":
        main()
"""
EVALUATE = """
    import torch

    @torch.no_grad()
    def evaluate(model, loader):
        correct = 0
        for x, y in loader:
            out = model(x.cuda(non_blocking=True))
            correct += (out.argmax(1).cpu() == y).sum().item()
        return correct
"""
IMAGES = """
    import torch

    class ImageFolder(torch.utils.data.Dataset):
        def __init__(self, root):
            self.root = root

        def __len__(self):
            return 100

        def __getitem__(self, i):
            return torch.randn(8), i % 2

    if __name__ == "__main__":
        from torch.utils.data import DataLoader
        model = torch.nn.Linear(8, 2).cuda()
        for x, y in DataLoader(ImageFolder("train"), batch_size=4, num_workers=2):
            print(model(x.cuda()).max().item())
"""
BENCH = """
    import time
    import torch

    def time_model(model):
        x = torch.randn(64, 8, device="cuda")
        for _ in range(10):
            model(x).sum().backward()
        return time.time()
"""
PREDICT = """
    import sys
    import torch
    from data.images import ImageFolder
    from utils.bench import time_model

    model = torch.load(sys.argv[1]).cuda().eval()
    with torch.no_grad():
        for x, name in torch.utils.data.DataLoader(ImageFolder(sys.argv[2]), batch_size=1, num_workers=2):
            label = model(x.cuda()).argmax().item()
            print(name, label)
"""
DUMP = """
    import torch
    from data.images import ImageFolder

    model = torch.load("model.pt").cuda()
    for x, y in torch.utils.data.DataLoader(ImageFolder("val"), batch_size=8, num_workers=2):
        print(model(x.cuda()).mean().item())
"""

EVAL_CHECKPOINT = """
    import torch
    from data.images import ImageFolder

    def evaluate(model, loader):
        model.eval()
        hits = 0
        for x, y in loader:
            hits += (model(x.cuda()).argmax(1).cpu() == y).sum().item()
        return hits

    if __name__ == "__main__":
        model = torch.load("model.pt").cuda()
        print(evaluate(model, torch.utils.data.DataLoader(ImageFolder("val"), batch_size=64, num_workers=2)))
"""


def project(files: dict[str, str]) -> Project:
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def codes(proj: Project, path: str) -> set[tuple[int, str]]:
    return {(f.span.line, f.code) for f in proj.analyze(path)}


def files(**extra: str) -> dict[str, str]:
    out = {"train.py": TRAIN, "evaluate.py": EVALUATE, "data/__init__.py": "", "data/images.py": IMAGES,
           "utils/__init__.py": "", "utils/bench.py": BENCH, "predict.py": PREDICT}
    out.update(extra)
    return out


def test_a_prediction_script_beside_training_has_no_step_loop_findings() -> None:
    proj = project(files(**{"tools/dump_outputs.py": DUMP}))
    assert not {c for _, c in codes(proj, "predict.py")} & {"TT101", "TT102", "TT301"}
    proj.solve()
    assert proj.by_path["predict.py"].ctx.auxiliary == AUXILIARY_SCRIPT  # a driver by its imports, named for prediction
    # a script that neither trains nor is imported, whatever its name: its loop is not a step either
    assert proj.by_path["tools/dump_outputs.py"].ctx.auxiliary == AUXILIARY
    assert not {c for _, c in codes(proj, "tools/dump_outputs.py")} & {"TT102", "TT301"}


def test_training_and_the_evaluation_it_runs_keep_their_findings() -> None:
    proj = project(files())
    train = codes(proj, "train.py")
    assert (18, "TT102") in train  # print(loss.item()) every step
    evaluate = codes(proj, "evaluate.py")
    assert (8, "TT101") in evaluate  # .item() on every validation batch, run by training each epoch
    proj.solve()
    assert proj.by_path["train.py"].ctx.auxiliary is None and proj.by_path["evaluate.py"].ctx.auxiliary is None


def test_a_library_files_main_block_is_a_self_test_but_the_entry_scripts_main_block_is_training() -> None:
    proj = project(files())
    images = codes(proj, "data/images.py")
    assert not {c for _, c in images} & {"TT102", "TT301"}  # the demo loop under __main__ of an imported file
    lone = project({"data/images.py": IMAGES})  # the same file alone: its main block is the script that runs
    assert {"TT102", "TT301"} <= {c for _, c in codes(lone, "data/images.py")}


def test_a_project_that_never_trains_keeps_its_loops() -> None:
    proj = project({"predict.py": PREDICT, "data/__init__.py": "", "data/images.py": IMAGES,
                    "utils/__init__.py": "", "utils/bench.py": BENCH.replace(".sum().backward()", ".sum()")})
    assert {"TT101", "TT301"} <= {c for _, c in codes(proj, "predict.py")}  # an inference repository: judged as before


def test_the_language_servers_view_gives_the_projects_findings() -> None:
    sources = files(**{"tools/dump_outputs.py": DUMP, "tools/eval_checkpoint.py": EVAL_CHECKPOINT})
    proj = project(sources)
    for path, text in sources.items():
        source = textwrap.dedent(text).lstrip("\n")
        view = proj.view(path)
        got = IncrementalAnalyzer(path).analyze(source, project=view)
        assert [(f.code, f.span) for f in got] == [(f.code, f.span) for f in proj.analyze(path)], path
    assert proj.view("predict.py").auxiliary == AUXILIARY_SCRIPT and proj.view("data/images.py").imported


def test_the_loader_rules_skip_scripts_beside_training_and_self_tests_of_imported_files() -> None:
    demo = IMAGES.replace("batch_size=4, num_workers=2", "batch_size=4")  # the demo's loader: no workers
    dump = DUMP.replace("batch_size=8, num_workers=2", "batch_size=8")
    proj = project(files(**{"data/images.py": demo, "tools/dump_outputs.py": dump}))
    assert "TT302" not in {c for _, c in codes(proj, "data/images.py")}
    assert "TT302" not in {c for _, c in codes(proj, "tools/dump_outputs.py")}
    lone = project({"data/images.py": demo})  # run as the script it is, the same loader is flagged
    assert "TT302" in {c for _, c in codes(lone, "data/images.py")}
    slow_train = TRAIN.replace("batch_size=32, num_workers=4, pin_memory=True", "batch_size=32, pin_memory=True")
    trained = project(files(**{"train.py": slow_train}))
    assert (10, "TT302") in codes(trained, "train.py")  # the training loader keeps its finding


def test_an_evaluation_script_beside_training_still_gets_tt501_and_nothing_of_the_step_rules() -> None:
    """Its loop is no training step (no TT101 for the per-batch ``.item()``), but an evaluation loop without
    ``no_grad`` is what TT501 is for: examples/eval_no_grad.py beside the examples that train lost it."""
    proj = project(files(**{"tools/eval_checkpoint.py": EVAL_CHECKPOINT}))
    found = codes(proj, "tools/eval_checkpoint.py")
    assert (7, "TT501") in found and "TT101" not in {c for _, c in found}
    proj.solve()
    assert proj.by_path["tools/eval_checkpoint.py"].ctx.auxiliary == AUXILIARY
    with_grad_off = EVAL_CHECKPOINT.replace("    def evaluate(", "    @torch.no_grad()\n    def evaluate(")
    assert "TT501" not in {c for _, c in codes(project(files(**{"tools/eval_checkpoint.py": with_grad_off})), "tools/eval_checkpoint.py")}


def test_a_timing_in_the_self_test_of_an_imported_file_is_left_alone() -> None:
    """TT402 too: the demo under ``__main__`` of a file the project imports times nothing of training."""
    timed = IMAGES.replace('''        for x, y in DataLoader(ImageFolder("train"), batch_size=4, num_workers=2):
            print(model(x.cuda()).max().item())''', '''        import time
        start = time.time()
        out = model(torch.randn(4, 8).cuda())
        print(time.time() - start, out.shape)''')
    assert "time.time() - start" in timed
    proj = project(files(**{"data/images.py": timed}))
    assert "TT402" not in {c for _, c in codes(proj, "data/images.py")}
    lone = project({"data/images.py": timed})  # run as the script it is, the timing reads launches, not the GPU
    assert "TT402" in {c for _, c in codes(lone, "data/images.py")}


def test_a_script_that_trains_through_a_loss_scaler_is_no_script_beside_training() -> None:
    """``loss_scaler(loss, optimizer, parameters=...)`` (timm's NativeScaler runs backward and steps the optimizer it is
    handed) is the only training marker of ``train/train_denoise.py``; a scheduler package's demo that steps an optimizer
    (``warmup_scheduler/run.py``) must not make the real trainer a script beside training."""
    from project_support import assert_views_match, project_of

    files = {
        "warmup_scheduler/run.py": """
            import torch

            model = [torch.nn.Parameter(torch.randn(2, 2, requires_grad=True))]
            optim = torch.optim.SGD(model, 0.1)
            for epoch in range(1, 20):
                optim.zero_grad()
                optim.step()
        """,
        "train/train_denoise.py": """
            import torch
            from torch.utils.data import DataLoader
            from timm.utils import NativeScaler

            model = build_model().cuda()
            optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4, fused=True)
            loss_scaler = NativeScaler()
            loader = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=8, pin_memory=True, persistent_workers=True)
            for epoch in range(250):
                for i, data in enumerate(loader):
                    optimizer.zero_grad()
                    target = data[0].cuda()
                    with torch.cuda.amp.autocast():
                        loss = criterion(model(data[1].cuda()), target)
                    loss_scaler(loss, optimizer, parameters=model.parameters())
        """,
    }
    proj = project_of(files)
    assert proj.context("train/train_denoise.py").auxiliary is None  # type: ignore[union-attr]
    assert {(f.span.line, f.code) for f in proj.analyze("train/train_denoise.py") if f.code == "TT301"} == {(12, "TT301"), (14, "TT301")}
    assert_views_match(proj, files)
