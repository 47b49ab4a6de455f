"""Issue 25: several training scripts in one repository, each building its own model class under one
name (``from models.pretrain import Model`` in one script, ``from models.retrieval import Model`` in
another) and handing it to its own ``train(model, loader, ...)``.  An invented project, no code of any
labelled repository: the name ``model`` is built from two classes across the project, but each script
builds one, so each ``train``'s ``model(...)`` runs that script's class's ``forward`` every step."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

PRETRAIN_MODEL = """
    import torch
    from torch import nn


    class Model(nn.Module):
        def forward(self, image, text):
            sim = image @ text.t()
            picks = []
            for b in range(image.size(0)):
                picks.append(torch.multinomial(sim[b].softmax(-1), 1).item())
            return sim.sum() + len(picks)
"""
RETRIEVAL_MODEL = """
    import torch
    from torch import nn


    class Model(nn.Module):
        def forward(self, image, text):
            sim = image @ text.t()
            best = sim.argmax(-1)[0].item()
            return sim.sum() + best
"""


def _script(module: str) -> str:
    return f"""
    import torch
    from models.{module} import Model


    def train(model, loader, optimizer):
        for image, text in loader:
            loss = model(image.cuda(non_blocking=True), text.cuda(non_blocking=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def main(loader):
        model = Model()
        model = model.to("cuda")
        model = torch.nn.parallel.DistributedDataParallel(model)
        optimizer = torch.optim.AdamW(model.parameters(), fused=True)
        train(model, loader, optimizer)
    """


FILES = {
    "models/__init__.py": "",
    "models/pretrain.py": PRETRAIN_MODEL,
    "models/retrieval.py": RETRIEVAL_MODEL,
    "pretrain.py": _script("pretrain"),
    "retrieval.py": _script("retrieval"),
}


def _findings(path: str, files: dict[str, str] = FILES) -> set[tuple[int, str]]:
    proj = Project((name, name, textwrap.dedent(text).lstrip("\n")) for name, text in files.items())
    return {(f.span.line, f.code) for f in proj.analyze(path)}


def test_each_scripts_own_model_runs_every_step() -> None:
    assert (10, "TT101") in _findings("models/pretrain.py")
    assert (8, "TT101") in _findings("models/retrieval.py")


def test_a_name_one_script_never_builds_stays_unresolved() -> None:
    """A script that builds nothing into ``model`` (its ``train`` is handed one from elsewhere) does not take
    one of the two classes at random: the forward passes' reads are then only forward code, found by no loop."""
    files = dict(FILES)
    files["retrieval.py"] = _script("retrieval").replace("        model = Model()\n", "        model = build()\n")
    files["pretrain.py"] = _script("pretrain").replace("        model = Model()\n", "        model = build()\n")
    assert (10, "TT101") not in _findings("models/pretrain.py", files)
