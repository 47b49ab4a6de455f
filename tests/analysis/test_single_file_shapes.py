"""Smaller single-file shapes from issue 12 (invented look-alikes of real training code)."""

from __future__ import annotations

import textwrap

from torchtriage.analysis import analyze_source
from torchtriage.config import Settings


def lines(source: str, code: str) -> set[int]:
    text = textwrap.dedent(source).lstrip("\n")
    return {f.span.line for f in analyze_source(text, "train.py", Settings(select=(code,)))}


def test_batch_tensors_moved_inside_comprehensions_are_blocking_copies():
    source = """
        import torch
        device = torch.device("cuda")
        for images, targets in loader:
            images = [img.to(device) for img in images]
            targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
            weights = [p.to(device) for p in model.parameters()]
            loss = model(images, targets)
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT301") == {4, 5}  # not line 6: parameters are not batch data


def test_a_read_that_guards_the_run_is_not_a_hazard_but_a_plain_read_is():
    source = """
        import math
        import sys
        import torch
        for x, y in loader:
            loss = model(x).sum()
            loss_value = loss.item()
            if not math.isfinite(loss_value):
                print("Loss is {}, stopping training".format(loss_value))
                sys.exit(1)
            if torch.isnan(loss).item():
                raise RuntimeError("nan")
            other = loss.item()
            if not math.isfinite(other):
                print("skipping")
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT101") == {12}
