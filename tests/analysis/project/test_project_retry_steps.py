"""Issue 25: a training step that retries itself on out-of-memory with smaller micro-batches is one step.

An invented project, no code of any labelled repository.  ``lib/steps.py``'s ``train_with_retry`` wraps its
backward in ``while size: try: ... except RuntimeError: size //= 2 else: break`` (a loop that runs once when
the work succeeds), splits the batch into micro-batches only when it must (a loop over the parts of its
``batch`` parameter, each with its own backward, the optimizer stepped once after them), and steps the
optimizer once.  Neither loop is a training loop: the script's loop that calls it once per batch is, and
that is where the fp32 finding (TT504) belongs."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

STEPS = """
    def split_batch(batch, size):
        return [batch[i:i + size] for i in range(0, len(batch), size)]


    def train_with_retry(optimizer, loss_fn, step, batch, chunk_size):
        loss = None
        while chunk_size:
            try:
                optimizer.zero_grad()
                if len(batch) <= chunk_size:
                    loss = loss_fn(*step(batch))
                    loss.backward()
                else:
                    for chunk in split_batch(batch, chunk_size):
                        part = loss_fn(*step(chunk)) * (len(chunk) / len(batch))
                        part.backward()
            except RuntimeError:
                chunk_size //= 2
            else:
                break
        optimizer.step()
        return loss, chunk_size
"""
TRAIN = """
    import torch
    import torch.nn.functional as F

    from lib.steps import train_with_retry

    device = torch.device("cuda")
    model = torch.nn.Linear(8, 1).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    X, Y = torch.randn(1024, 8, device=device), torch.randn(1024, device=device)
    for epoch in range(10):
        for idx in torch.randperm(1024, device=device).split(64):
            loss, _ = train_with_retry(optimizer, F.mse_loss, lambda i: (model(X[i]).squeeze(1), Y[i]), idx, 64)
"""


def test_a_step_that_retries_on_out_of_memory_leaves_the_training_loop_to_its_caller() -> None:
    files = {"lib/__init__.py": "", "lib/steps.py": STEPS, "train.py": TRAIN}
    solved = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    assert (11, "TT504") in {(f.span.line, f.code) for f in solved.analyze("train.py")}
    assert not [f for f in solved.analyze("lib/steps.py") if f.code == "TT504"]
