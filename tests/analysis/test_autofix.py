"""Fix-all with the facts of the file's project: the fixes of the findings the editor shows.

A file whose CUDA device comes from the script that imports it gets the CUDA-only
findings (and their fixes) only through its project view; ``fix_source`` with that
view must fix them, as the language server's fix-all does.
"""

from __future__ import annotations

from torchtriage.analysis import fix_source
from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.project_view import ProjectView
from torchtriage.config import Settings

ENGINE = '''\
def train_one_epoch(model, loader, optimizer, device):
    for images, targets in loader:
        images = images.to(device)
        targets = targets.to(device)
        loss = model(images, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''
VIEW = ProjectView(cuda_from="train.py")
SETTINGS = Settings(select=("TT301",))


def test_fix_all_with_the_project_view_fixes_the_findings_it_shows() -> None:
    shown = IncrementalAnalyzer("engine.py").analyze(ENGINE, SETTINGS, project=VIEW)
    assert [f.code for f in shown] == ["TT301", "TT301"]
    assert all(f.fix is not None for f in shown)

    alone = fix_source(ENGINE, "engine.py", SETTINGS)
    assert not alone.changed  # on its own the file never mentions CUDA

    fixed = fix_source(ENGINE, "engine.py", SETTINGS, project=VIEW)
    assert fixed.applied == 2
    assert "images = images.to(device, non_blocking=True)" in fixed.source
    assert "targets = targets.to(device, non_blocking=True)" in fixed.source
    assert fixed.remaining == IncrementalAnalyzer("engine.py").analyze(fixed.source, SETTINGS, project=VIEW) == []
