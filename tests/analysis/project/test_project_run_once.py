"""Issue 25: the final evaluation after training.  A function the project calls once, outside every loop
(``evaluate_standard(test_loader, model)`` after the epochs), loops over the test loader one pass in the
whole run: its per-batch copies and reads are no cost of a training step.  Invented projects, no code of
any labelled repository; the look-alikes that stay reported: a validation called every epoch, an
evaluation also called in a loop elsewhere, one handed around uncalled (a callback), one whose loop is
nested in another of its loops, and a once-run function whose loop trains."""

from __future__ import annotations

from project_support import assert_views_match, project_of
from torchtriage.analysis.project.program import Project

UTILS = """
    import torch
    import torch.nn.functional as F


    def evaluate_standard(test_loader, model):
        test_loss = 0
        model.eval()
        with torch.no_grad():
            for X, y in test_loader:
                X, y = X.cuda(), y.cuda()
                test_loss += F.cross_entropy(model(X), y).item()
        return test_loss


    @torch.no_grad()
    def final_test(loader, model):
        for X, y in loader:
            print(model(X.cuda()).argmax(1).cpu().numpy())


    def validate(val_loader, model):
        model.eval()
        total = 0
        for X, y in val_loader:
            X, y = X.cuda(), y.cuda()
            total += F.cross_entropy(model(X), y).item()
        return total


    def sweep(loaders, model):
        model.eval()
        for loader in loaders:
            for X, y in loader:
                print(F.cross_entropy(model(X.cuda()), y.cuda()).item())
"""
TRAIN = """
    import torch
    import torch.nn.functional as F
    from utils import evaluate_standard, final_test, sweep, validate


    def main():
        model = Net().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
        test_loader = torch.utils.data.DataLoader(test_set, batch_size=100)
        for epoch in range(10):
            model.train()
            for X, y in train_loader:
                X, y = X.cuda(non_blocking=True), y.cuda(non_blocking=True)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = F.cross_entropy(model(X), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            validate(val_loader, model)
        print(evaluate_standard(test_loader, model))
        final_test(test_loader, model)
        sweep([val_loader, test_loader], model)


    if __name__ == "__main__":
        main()
"""


def project(files: dict[str, str]) -> Project:
    return project_of(files)


def _found(files: dict[str, str], path: str) -> set[tuple[int, str]]:
    return {(f.span.line, f.code) for f in project(files).analyze(path)}


def test_the_final_evaluation_after_training_is_no_step() -> None:
    utils = _found({"utils.py": UTILS, "train.py": TRAIN}, "utils.py")
    assert not {line for line, _ in utils if 5 <= line <= 12}  # evaluate_standard: model.eval(), grad off, once
    assert not {line for line, _ in utils if 15 <= line <= 18}  # final_test: @torch.no_grad(), once
    assert {(25, "TT301"), (26, "TT101")} <= utils  # validate runs every epoch
    assert {(34, "TT301"), (34, "TT102")} <= utils  # sweep's loop is nested in its loop over the loaders


def test_a_final_evaluation_under_attack_is_still_no_step() -> None:
    attacked = UTILS.replace("                test_loss += F.cross_entropy(model(X), y).item()",
                             "                test_loss += F.cross_entropy(model(X + attack(model, X, y)), y).item()") + """

    def attack(model, X, y):
        delta = torch.zeros_like(X, requires_grad=True)
        F.cross_entropy(model(X + delta), y).backward()  # the inputs' gradient: no optimizer steps
        return delta.grad.sign()
"""
    found = _found({"utils.py": attacked, "train.py": TRAIN}, "utils.py")
    assert not {line for line, _ in found if 5 <= line <= 12}, found


def test_a_loader_read_only_by_the_final_test_needs_no_pinned_memory() -> None:
    trainer = """
        import torch
        from torch.utils.data import DataLoader


        class Trainer:
            def train(self):
                loader = DataLoader(self.train_set, batch_size=8, num_workers=4, pin_memory=True)
                for epoch in range(100):
                    for x, y in loader:
                        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                        self.model(x).sum().backward()
                        self.optimizer.step()

            def test(self):
                self.model.eval()
                test_loader = DataLoader(self.test_set, batch_size=1)
                for x, y in test_loader:
                    self.save(self.model(x.cuda()))
    """
    main = "from trainer import Trainer\nt = Trainer()\nt.train()\nt.test()\n"
    found = _found({"trainer.py": trainer, "main.py": main}, "trainer.py")
    assert not {line for line, code in found if line >= 15 and code in ("TT303", "TT301")}, found
    looped = main.replace("t.test()", "for _ in range(3):\n    t.test()")
    assert (16, "TT303") in _found({"trainer.py": trainer, "main.py": looped}, "trainer.py")


def test_an_evaluation_also_called_in_a_loop_or_handed_around_stays_per_step() -> None:
    each_epoch = "        for epoch in range(10):\n            evaluate_standard(val_loader, model)\n"
    looped = TRAIN.replace("        for epoch in range(10):\n", each_epoch)
    assert (11, "TT101") in _found({"utils.py": UTILS, "train.py": looped}, "utils.py")
    handed = TRAIN.replace("    if __name__", "    CALLBACKS = [evaluate_standard]\n\n\n    if __name__")
    assert (11, "TT101") in _found({"utils.py": UTILS, "train.py": handed}, "utils.py")
    sweep = "from utils import final_test\nfor loader in loaders:\n    final_test(loader, model)\n"
    called_in_loop_elsewhere = {"utils.py": UTILS, "train.py": TRAIN, "sweep.py": sweep}
    assert (18, "TT102") in _found(called_in_loop_elsewhere, "utils.py")


def test_a_once_run_loop_that_trains_or_does_not_evaluate_stays_per_step() -> None:
    blocking = TRAIN.replace("X.cuda(non_blocking=True), y.cuda(non_blocking=True)", "X.cuda(), y.cuda()")
    trains = blocking.replace("        for epoch in range(10):", "        model.eval()\n        for epoch in range(10):")
    assert (14, "TT301") in _found({"utils.py": UTILS, "train.py": trains}, "train.py")  # main runs once; its loop trains
    finetune = UTILS + """

    def finetune(loader, model, opt):
        model.eval()  # batch-norm statistics frozen
        for X, y in loader:
            F.cross_entropy(model(X.cuda()), y.cuda()).backward()
            opt.step()
"""
    once = TRAIN.replace("        sweep(", "        finetune(few_shot_loader, model, opt)\n        sweep(").replace(
        "from utils import evaluate_standard", "from utils import finetune, evaluate_standard")
    assert (40, "TT301") in _found({"utils.py": finetune, "train.py": once}, "utils.py")  # runs once, but trains
    helper = finetune.replace("""            F.cross_entropy(model(X.cuda()), y.cuda()).backward()
            opt.step()""", """            step(model, opt, X.cuda(), y)


    def step(model, opt, X, y):
        F.cross_entropy(model(X), y.cuda()).backward()
        opt.step()""")
    assert (40, "TT301") in _found({"utils.py": helper, "train.py": once}, "utils.py")  # trains through its helper
    meta = UTILS.replace("        model.eval()\n        with torch.no_grad():\n            for X, y in test_loader:",
                         "        if True:\n            for X, y in test_loader:")
    assert (10, "TT101") in _found({"utils.py": meta, "train.py": TRAIN}, "utils.py")  # no eval mode, grad on: may train


def test_a_project_that_does_not_train_is_judged_as_before() -> None:
    evaluation_only = {"utils.py": UTILS, "main.py": "from utils import evaluate_standard\nevaluate_standard(loader, model)\n"}
    assert (11, "TT101") in _found(evaluation_only, "utils.py")
    view = project(evaluation_only).view("utils.py")
    assert view is None or not view.run_once


def test_the_language_servers_view_gives_the_same_findings() -> None:
    files = {"utils.py": UTILS, "train.py": TRAIN}
    proj = project(files)
    assert proj.view("utils.py").run_once == {"evaluate_standard", "final_test", "sweep"}  # type: ignore[union-attr]
    assert_views_match(proj, files)
