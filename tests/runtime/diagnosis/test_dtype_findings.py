"""Dtype churn at runtime, end to end on CPU (TTR503): a bfloat16 model meets float32 tensors.

Real scripts through the real CLI: the agent reads each op's input dtypes and
sizes (record_shapes) and the casts between float dtypes; the host places
operator-slot ops (``h * self.scale``) on their line from the source.  Lines,
codes and bytes derived from the shapes are checked, never times.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
from run_support import profile_source

from torchtriage.runtime.results.profile_data import ProfileData
from torchtriage.runtime.report.writer import load_schema

pytestmark = pytest.mark.slow

HEADER = "import torch\n\ntorch.set_num_threads(1)\n"
SCRIPTS = {
    # a float32 buffer registered after model.to(bfloat16), and a float32 constant made in the forward
    "mixed": """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(64, 64)
                self.mid = torch.nn.Linear(64, 64)
                self.b = torch.nn.Linear(64, 8)

            def forward(self, x):
                h = self.a(x).relu()
                h = h * self.scale  # PROMOTE_BUFFER
                h = self.mid(h.to(torch.bfloat16))  # CAST_BACK
                offset = torch.tensor([0.5] * 64, dtype=torch.float32)  # CONSTANT
                h = h + offset  # PROMOTE_CONSTANT
                return self.b(h.bfloat16())  # CAST_BACK_2


        model = Net().to(torch.bfloat16)
        model.register_buffer("scale", torch.ones(64))  # BUFFER
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(256, 64, dtype=torch.bfloat16)
        for step in range(100_000):
            loss = model(x).float().square().mean()  # UPCAST
            loss.backward()
            opt.step()
            opt.zero_grad()
    """,
    # the negative look-alike: the same model all in bfloat16 (its buffer registered before .to()), an upcast for the loss
    "pure_bf16": """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(64, 64)
                self.b = torch.nn.Linear(64, 8)
                self.register_buffer("scale", torch.ones(64))

            def forward(self, x):
                h = self.a(x).relu()
                h = h * self.scale
                return self.b(h)


        model = Net().to(torch.bfloat16)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(256, 64, dtype=torch.bfloat16)
        for step in range(100_000):
            loss = model(x).float().square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
    """,
    # a float32 model under bfloat16 autocast: the second Linear gets a bfloat16 activation and its float32
    # weight, which autocast casts inside aten::linear (on an H200 fp16 autocast read as TTR503 "promoted")
    "autocast": """
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(256, 64)
        for step in range(100_000):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(x)  # FORWARD
            loss = out.float().square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
    """,
}
OPTIONS = {"autocast": ("--record-shapes", "on")}  # a float32 model's run records no shapes unless asked
CAST_BYTES = 256 * 64 * (2 + 4)  # one bfloat16 [256, 64] tensor read, its float32 copy written


def mark(source: str, tag: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if f"# {tag}" in line)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, ProfileData, Path, str]]:
    base = tmp_path_factory.mktemp("dtype_runs")
    out = {}
    for name, body in SCRIPTS.items():
        source = HEADER + textwrap.dedent(body)
        script, folder = profile_source(base, name, source, options=OPTIONS.get(name, ()))
        out[name] = (json.loads((folder / "report.json").read_text()), ProfileData.load(folder / "profile.json"), script, source)
    return out


def churn(report: dict) -> dict[int, dict]:
    return {f["line"]: f for f in report["runtime_findings"] if f["code"] == "TTR503"}


def test_reports_validate(runs: dict) -> None:
    validator = jsonschema.Draft202012Validator(load_schema())
    for name, (report, *_) in runs.items():
        assert not list(validator.iter_errors(report)), name
        assert report["compile"] is None  # nothing was compiled


def test_a_float32_buffer_in_a_bfloat16_model_is_promoted_on_its_line(runs: dict) -> None:
    report, _, script, source = runs["mixed"]
    finding = churn(report)[mark(source, "PROMOTE_BUFFER")]
    assert finding["path"] == str(script) and finding["name"] == "runtime-dtype-churn"
    details = finding["details"]
    assert (details["kind"], details["op"], details["dtypes"]) == ("promotion", "aten::mul", "bfloat16[256, 64] float32[64]")
    assert details["per_step"] == 1
    # the bfloat16 operand is cast to float32 for the op: at least that many bytes per step
    assert details["cast_bytes_per_step"] >= CAST_BYTES
    assert "promoted to float32" in finding["message"]
    # where the float32 tensor comes from: the register_buffer line
    assert (details["origin_path"], details["origin_line"]) == (str(script), mark(source, "BUFFER"))
    assert any(e["line"] == mark(source, "BUFFER") for e in finding["evidence"])
    assert "register it as a buffer before model.to(dtype)" in finding["recommendations"][0]["action"]


def test_a_float32_constant_made_in_the_step_is_traced_to_its_line(runs: dict) -> None:
    report, _, script, source = runs["mixed"]
    finding = churn(report)[mark(source, "PROMOTE_CONSTANT")]
    details = finding["details"]
    assert (details["op"], details["dtypes"]) == ("aten::add", "bfloat16[256, 64] float32[64]")
    assert (details["origin_path"], details["origin_line"]) == (str(script), mark(source, "CONSTANT"))
    assert details["cast_bytes_per_step"] >= CAST_BYTES


def test_casting_back_down_is_churn_and_an_upcast_for_the_loss_is_not(runs: dict) -> None:
    report, profile, script, source = runs["mixed"]
    found = churn(report)
    for tag in ("CAST_BACK", "CAST_BACK_2"):
        finding = found[mark(source, tag)]
        assert finding["details"]["kind"] == "cast" and finding["details"]["dtypes"] == "float32->bfloat16"
        assert finding["details"]["origin_line"] == mark(source, "PROMOTE_BUFFER")  # the first promotion
        assert finding["details"]["cast_bytes_per_step"] >= 256 * 64 * (4 + 2)
    # .float() before the loss is a cast too (recorded), but an intended upcast: no finding
    upcast = mark(source, "UPCAST")
    assert any(d.line == upcast and d.kind == "cast" and d.dtypes == "bfloat16->float32" for d in profile.dtype_lines)
    assert upcast not in found
    assert set(found) == {mark(source, t) for t in ("PROMOTE_BUFFER", "PROMOTE_CONSTANT", "CAST_BACK", "CAST_BACK_2")}


def test_a_pure_bfloat16_model_stays_quiet(runs: dict) -> None:
    report, profile, _, _ = runs["pure_bf16"]
    assert not churn(report)
    assert not [d for d in profile.dtype_lines if d.kind == "mixed"]
    # its inputs were read all the same (bfloat16 parameters turn record_shapes on): the quiet is a measured one
    assert json.loads((Path(report["trace"]["agent_json"])).read_text())["meta"]["record_shapes"] is True
    assert any(d.kind == "cast" for d in profile.dtype_lines)  # the loss's .float(), recorded and not flagged


def test_mixed_inputs_of_an_op_autocast_casts_inside_are_no_churn(runs: dict) -> None:
    report, profile, _, source = runs["autocast"]
    mixed = [d for d in profile.dtype_lines if d.kind == "mixed"]
    assert any(d.op == "aten::linear" and d.line == mark(source, "FORWARD") for d in mixed), mixed  # recorded as mixed...
    assert churn(report) == {}  # ...and not reported: outside autocast a Linear refuses mixed dtypes
