"""The helper process that checks a run's hot files for `analyze` gives the findings the run's own process
would, carries each finding's rule facts, and never loses the findings when it fails."""

from __future__ import annotations

from pathlib import Path

from torchtriage.runtime.profiling.hot_findings import hot_files, static_findings
from torchtriage.runtime.profiling.static_helper import StaticHelper
from torchtriage.runtime.results.profile_data import LineCost, ProfileData

TRAIN = '''import torch
from helpers import make_loader

model = torch.nn.Linear(8, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in make_loader():
    x = x.cuda()
    loss = (model(x) - y.cuda()).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    value = loss.item()
'''
HELPERS = '''import torch
from torch.utils.data import DataLoader, Dataset


class Decoded(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        return torch.load(f"sample{i}.pt")


def make_loader():
    return DataLoader(Decoded(), batch_size=8)
'''


def _profile(project: Path) -> ProfileData:
    (project / "train.py").write_text(TRAIN, encoding="utf-8")
    (project / "helpers.py").write_text(HELPERS, encoding="utf-8")
    lines = [LineCost("train.py", 12, "host_sync", 900.0), LineCost("helpers.py", 10, "data_loading", 300.0)]
    return ProfileData(script="train.py", argv=[], cwd=str(project), device="cuda", device_name="", torch_version="",
                       python="", step_detection="optimizer", lines=lines)


def _keys(findings: list) -> list[tuple[str, str, int]]:
    return sorted((f.code, Path(f.path).name, f.span.line) for f in findings)


def test_the_helper_gives_what_this_process_finds_with_each_rule_s_facts(tmp_path: Path) -> None:
    profile = _profile(tmp_path)
    here = static_findings(profile)
    with StaticHelper.start() as helper:
        assert helper.process is not None
        there = helper._ask([str(p.resolve()) for p in hot_files(profile)])  # the helper's own answer, no fallback
    assert there is not None
    assert {("TT101", "train.py", 12), ("TT302", "helpers.py", 14)} <= set(_keys(there))
    assert _keys(there) == _keys(here)
    assert [f.path for f in there] == [f.path for f in here] and all(Path(f.path).is_absolute() for f in there)
    facts = {f.code: (f.extra["category"], f.extra["requires_cuda"]) for f in there}
    assert facts["TT101"] == ("host_sync", False) and facts["TT302"] == ("data_loading", False)
    assert facts.get("TT301", ("data_loading", True)) == ("data_loading", True)  # blocking copies: a CUDA-only rule
    assert helper.process is None


def test_a_helper_that_died_leaves_the_checking_to_this_process(tmp_path: Path) -> None:
    profile = _profile(tmp_path)
    helper = StaticHelper.start()
    assert helper.process is not None
    process = helper.process
    process.kill()
    process.wait()
    with helper:
        found = helper.findings(profile)
    assert _keys(found) == _keys(static_findings(profile)) and found


def test_a_helper_never_asked_is_stopped_and_a_second_question_is_answered_here(tmp_path: Path) -> None:
    with StaticHelper.start() as unasked:
        process = unasked.process
    assert process is not None and process.returncode is not None  # stopped, not left running
    profile = _profile(tmp_path)
    with StaticHelper.start() as helper:
        first, second = helper.findings(profile), helper.findings(profile)
    assert _keys(first) == _keys(second) and first


def test_no_hot_python_file_asks_nothing(tmp_path: Path) -> None:
    profile = ProfileData(script="", argv=[], cwd=str(tmp_path), device="cpu", device_name="", torch_version="",
                          python="", step_detection="optimizer", lines=[LineCost("gone.py", 3, "compute", 10.0)])
    with StaticHelper.start() as helper:
        assert helper.findings(profile) == []
