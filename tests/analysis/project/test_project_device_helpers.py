"""Issue 25: a script that gets its device from a project helper runs on CUDA.

An invented project, no code of any labelled repository.  ``src/util/util.py``'s ``get_cuda(i)`` returns
``torch.device("cuda:%d" % i) if torch.cuda.is_available() else torch.device("cpu")``, and the package
``src/util/__init__.py`` re-exports it.  ``train/train.py`` puts ``src`` on its path and does ``import util``:
that is the package (``src/util``), not the module of the same name inside it.  Its device is then CUDA, and
the blocking batch copy in its step loop is a finding (TT301)."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

UTIL = """
    import torch


    def get_cuda(gpu_id):
        return (
            torch.device("cuda:%d" % gpu_id)
            if torch.cuda.is_available()
            else torch.device("cpu")
        )
"""
TRAIN = """
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

    import torch
    import util

    device = util.get_cuda(0)
    model = torch.nn.Linear(8, 1).to(device=device)
    optimizer = torch.optim.Adam(model.parameters(), fused=True)
    loader = torch.utils.data.DataLoader(range(100), batch_size=8, num_workers=4, pin_memory=True, persistent_workers=True)
    for epoch in range(10):
        for data in loader:
            images = data["images"].to(device=device)
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = model(images).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_a_device_from_a_helper_of_a_package_on_the_scripts_path_is_cuda() -> None:
    files = {"src/util/__init__.py": "from .util import *\n", "src/util/util.py": UTIL, "train/train.py": TRAIN}
    solved = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    assert {(f.span.line, f.code) for f in solved.analyze("train/train.py")} == {(15, "TT301")}
