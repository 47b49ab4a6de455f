"""Hot loops: rarely-true guards, and odd inputs.

Sources mark their lines: ``# H`` per-step, ``# C`` not (see hotloops_support).
"""

from __future__ import annotations

import ast

import pytest
from hotloops_support import analyse, check_marks, region_at

from torchtriage.analysis.hotloops.step_markers import is_rare_guard, tokens


# --- rare guards ------------------------------------------------------------------------------


GUARDS = [
    ("step % log_every == 0", True),
    ("i % 1 == 0", False),
    ("(i + 1) % 1 == 0", False),
    ("step % log_every != 0", False),
    ("step % 10", False),
    ("not step % 10", True),
    ("i == len(loader) - 1", True),
    ("batch_idx + 1 == len(train_loader)", True),
    ("last_batch or batch_idx % log_interval == 0", True),
    ("last_batch or use_amp", False),
    ("args.rank == 0", False),
    ("rank == 0", False),
    ("is_main_process", False),
    ("master_process", False),
    ("trainer.is_global_zero", False),
    ("is_main_process and step % 100 == 0", True),
    ("args.dry_run", True),
    ("should_log(step)", True),
    ("self.is_last_batch()", True),
    ("step == 0", True),
    ("epoch == start_epoch", True),
    ("step in eval_steps", True),
    ("step > warmup_steps", False),
    ("num_gpus == 1", False),
    ("args.mode == 'train'", False),
    ("scaler is not None", False),
    ("logits is None", False),
    ("interval_loss > 0", False),
    ("args.distributed", False),
    ("accelerator.sync_gradients", False),
    ("'%d' % step == '0'", False),
]


@pytest.mark.parametrize(("test", "rare"), GUARDS, ids=[g[0] for g in GUARDS])
def test_rare_guard_table(test, rare):
    expression = ast.parse(test, mode="eval").body
    assert is_rare_guard(expression, {"step", "i", "batch_idx"}) is rare


def test_name_tokens():
    assert tokens("is_lastBatch") == {"is", "last", "batch"}
    assert tokens("optimizerD") == {"optimizer", "d"}
    assert "val" not in tokens("interval")


def test_rare_guard_else_branch_is_per_step():
    check_marks(
        """
        for step, (x, y) in enumerate(loader):
            if step % 100 == 0:                          # H
                log(x)                                   # C
            elif step % 10 == 0:                         # H
                small_log(x)                             # C
            else:
                out = model(x)                           # H
        """
    )


# --- odd inputs ----------------------------------------------------------------------------


def test_recursive_step_functions_terminate():
    hot = check_marks(
        """
        def step(batch, depth=0):
            if depth < 3:                                # H
                return step(batch, depth + 1)            # H
            return model(batch)                          # H

        for batch in loader:
            step(batch)                                  # H
        """
    )
    assert sum(r.kind == "step-function" for r in hot.regions) == 1


def test_empty_and_loopless_modules():
    assert analyse("")[1].regions == []
    assert analyse("x = 1\ndef f():\n    return model(x)\n")[1].regions == []


def test_regions_sorted_and_every_region_node_owned():
    _code, hot = analyse(
        """
        for x, y in loader_b:
            model(x)
        for x, y in loader_a:
            for chunk in x.split(2):
                model(chunk).sum().backward()
        """
    )
    lines = [r.node.lineno for r in hot.regions]
    assert lines == sorted(lines) == [1, 3, 4]
    inner = region_at(hot, 4)
    call = next(n for n in ast.walk(inner.node) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "backward")
    assert hot.region_of(call) is inner  # the innermost step loop owns its body


def test_the_first_few_batches_only_are_not_per_step() -> None:
    # ``if plots and batch_i < 3:`` (a detection repository's val loop, issue 25) holds on three batches;
    # ``epoch < 3`` inside the step loop holds on every step of the first epochs, and ``i < warmup``
    # (a name, not a small literal) on the first warmup steps: both stay per-step.
    check_marks(
        """
        for epoch in range(epochs):
            for batch_i, (im, targets) in enumerate(loader):
                out = model(im.cuda())  # H
                if plots and batch_i < 3:
                    plot_images(im, out.cpu().numpy())  # C
                if epoch < 3:
                    frozen = out.detach().cpu()  # H
                if batch_i < warmup:
                    lr = base_lr * batch_i / warmup  # H
                out.sum().backward()  # H
        """
    )


def test_the_first_few_batches_by_a_counter_derived_from_the_loop_index() -> None:
    # ``pbar = tqdm(enumerate(loader))`` then ``for i, (imgs, targets) in pbar:`` and ``ni = i + nb * epoch``
    # (a detection repository's train loop, issue 25): ``if ni < 3`` plots the first three batches of the run.
    # ``ni <= nw`` (warm-up, a name) and ``total = loss + ni`` (no counter bound) stay per-step.
    check_marks(
        """
        for epoch in range(epochs):
            pbar = tqdm(enumerate(train_loader), total=nb)
            for i, (imgs, targets) in pbar:
                ni = i + nb * epoch  # H
                out = model(imgs.cuda())  # H
                if ni <= nw:
                    lr = base_lr * ni / nw  # H
                if plots:
                    if ni < 3:
                        plot_images(imgs, targets, out.cpu().numpy())  # C
                out.sum().backward()  # H
        """
    )
