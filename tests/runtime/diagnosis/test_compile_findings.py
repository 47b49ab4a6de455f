"""torch.compile at runtime, end to end on CPU: graph breaks (TTR501), recompiles (TTR502), compile time.

Each scenario is a small compiled training script written here and profiled
through the real CLI; the agent reads what dynamo records (callbacks, graph-break
logs, compilation metrics).  ``backend="eager"`` keeps the runs short: graph
breaks and guards are dynamo's, whatever the backend.  Lines and codes are
checked, never times.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console
from run_support import profile_source

import torchtriage.runtime.agent as agent_package
from torchtriage.runtime.report.html import render_html
from torchtriage.runtime.results.profile_data import ProfileData
from torchtriage.runtime.report.writer import load_schema
from torchtriage.runtime.report.summary import render_summary

pytestmark = pytest.mark.slow

HEADER = "import torch\n\ntorch.set_num_threads(1)\n"
SCRIPTS = {
    # a data-dependent branch on .item() inside the compiled forward
    "item_break": """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(64, 64)
                self.b = torch.nn.Linear(64, 8)

            def forward(self, x):
                h = self.a(x).relu()
                if h.mean().item() > 0.1:  # BREAK
                    h = h * 2
                return self.b(h)


        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        compiled = torch.compile(model, backend="eager")
        x = torch.randn(32, 64)
        for step in range(100_000):
            loss = compiled(x).square().mean()  # CALL
            loss.backward()
            opt.step()
            opt.zero_grad()
    """,
    # variable-length batches into a compiled module (dynamo's default: one recompile, then dynamic)
    "variable_length": """
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        compiled = torch.compile(model, backend="eager")
        for step in range(100_000):
            x = torch.randn(8 + step % 5, 16)
            loss = compiled(x).square().mean()  # CALL
            loss.backward()
            opt.step()
            opt.zero_grad()
    """,
    # static shapes and a new length every step: recompiles inside the recorded window until the limit
    "thrash": """
        torch._dynamo.config.recompile_limit = 3


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(16, 32)
                self.b = torch.nn.Linear(32, 1)

            def forward(self, x):  # DEF
                return self.b(self.a(x).relu())


        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        compiled = torch.compile(model, backend="eager", dynamic=False)
        for step in range(100_000):
            x = torch.randn(8 + step, 16)
            loss = compiled(x).square().mean()  # CALL
            loss.backward()
            opt.step()
            opt.zero_grad()
    """,
    # the negative look-alike: a compiled step with fixed shapes and nothing dynamo cannot trace
    "clean": """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(64, 64)
                self.b = torch.nn.Linear(64, 8)

            def forward(self, x):
                h = self.a(x).relu()
                return self.b(torch.where(h.mean() > 0.1, h * 2, h))


        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        compiled = torch.compile(model, backend="eager")
        x = torch.randn(32, 64)
        for step in range(100_000):
            loss = compiled(x).square().mean()  # CALL
            loss.backward()
            opt.step()
            opt.zero_grad()
    """,
}


def mark(source: str, tag: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if f"# {tag}" in line)


class Run:
    def __init__(self, folder: Path, script: Path, source: str) -> None:
        self.folder, self.script, self.source = folder, script, source
        self.report = json.loads((folder / "report.json").read_text())
        self.profile = ProfileData.load(folder / "profile.json")

    def line(self, tag: str) -> int:
        return mark(self.source, tag)

    def findings(self, code: str) -> list[dict]:
        return [f for f in self.report["runtime_findings"] if f["code"] == code]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    base = tmp_path_factory.mktemp("compile_runs")
    out = {}
    for name, body in SCRIPTS.items():
        source = HEADER + textwrap.dedent(body)
        script, folder = profile_source(base, name, source)
        out[name] = Run(folder, script, source)
    return out


def test_every_compiled_report_validates(runs: dict[str, Run]) -> None:
    validator = jsonschema.Draft202012Validator(load_schema())
    for name, run in runs.items():
        assert not list(validator.iter_errors(run.report)), name
        assert run.report["schema_version"] == "1.3"
        assert run.report["compile"]["compiles"] >= 1, name
        # float32 models: no dtype churn is possible, so op inputs are not recorded (record_shapes costs every op)
        assert json.loads(Path(run.report["trace"]["agent_json"]).read_text())["meta"]["record_shapes"] is False, name


def test_an_item_branch_in_the_compiled_forward_is_a_graph_break_on_its_line(runs: dict[str, Run]) -> None:
    run = runs["item_break"]
    (finding,) = run.findings("TTR501")
    assert (finding["path"], finding["line"], finding["severity"]) == (str(run.script), run.line("BREAK"), "warning")
    assert finding["name"] == "runtime-graph-break"
    assert "Tensor.item()" in finding["details"]["kind"] and "forward" in finding["details"]["compiled"]
    assert "Tensor.item()" in finding["message"]
    # the compiled function's call line is in the evidence, the fixes name the ways out
    assert any(e["line"] == run.line("CALL") for e in finding["evidence"])
    actions = " ".join(r["action"] + r["example"] for r in finding["recommendations"])
    assert "out of the compiled function" in actions and "capture_scalar_outputs = True" in actions and "torch.cond" in actions
    # the compile block counts it against the compiled forward, which dynamo resumed after the break
    frames = run.report["compile"]["frames"]
    forward = next(f for f in frames if f["function"] == "forward")
    assert forward["graph_breaks"] == 1 and forward["call_line"] == run.line("CALL")
    assert any(f["function"].startswith("torch_dynamo_resume_in_forward") for f in frames)
    assert run.report["compile"]["graph_breaks"] == 1


def test_variable_lengths_recompile_once_and_the_shape_guard_is_named(runs: dict[str, Run]) -> None:
    run = runs["variable_length"]
    (finding,) = run.findings("TTR502")
    assert (finding["path"], finding["line"]) == (str(run.script), run.line("CALL"))
    details = finding["details"]
    assert details["changed"] == "shape" and details["recompiles"] == 1 and not details["recompile_limit_hit"]
    assert any("size mismatch at index 0" in g for g in details["failed_guards"])
    assert "a new input shape" in finding["message"] and "size mismatch" in finding["message"]
    actions = " ".join(r["action"] + r["example"] for r in finding["recommendations"])
    assert "buckets" in actions and "drop_last=True" in actions and "dynamic=True" in actions and "mark_dynamic" in actions
    assert finding["severity"] == "info"  # one recompile, then dynamo compiles for dynamic shapes: worth knowing, not thrash
    assert not run.findings("TTR501")


def test_thrash_hits_the_recompile_limit_and_compiling_is_not_step_time(runs: dict[str, Run]) -> None:
    run = runs["thrash"]
    (finding,) = run.findings("TTR502")
    assert (finding["line"], finding["severity"]) == (run.line("CALL"), "warning")
    assert finding["details"]["recompile_limit_hit"] and finding["details"]["recompile_limit"] == 3
    assert "recompile limit (3)" in finding["message"] and "run eagerly" in finding["message"]
    assert "recompile_limit" in finding["recommendations"][0]["action"]
    compiled = run.report["compile"]
    assert compiled["recompile_limit_hit"] and compiled["recompiles"] == 3
    (frame,) = compiled["frames"]
    assert (frame["function"], frame["line"]) == ("forward", run.line("DEF"))
    # a recompile fell inside the recorded steps: its time is counted apart, not as step time
    assert compiled["compile_ms_in_window"] > 0
    compiling = [s for s in run.profile.steps if s.compile_us > 0]
    assert compiling and all(s.duration_us == pytest.approx(s.end_us - s.start_us - s.compile_us) for s in compiling)
    assert run.report["step_times_ms"] == [round(s.duration_us / 1000, 4) for s in run.profile.steps]
    assert any("torch.compile compiled during" in w for w in run.report["warnings"])
    # and the window was not cut short by counting a compile as the steps' event volume
    assert run.report["steps_profiled"] == 3 and not any("profiler events" in w for w in run.report["warnings"])
    dynamo_internals = ("entire_frame_compile", "compile_inner", "convert_frame", "_compile")
    for spot in run.report["hotspots"]:
        assert not any(name in dynamo_internals for name in spot["top_names"]), spot


def test_a_clean_compiled_step_stays_quiet(runs: dict[str, Run]) -> None:
    run = runs["clean"]
    assert not run.findings("TTR501") and not run.findings("TTR502")
    compiled = run.report["compile"]
    assert compiled["graph_breaks"] == 0 and compiled["recompiles"] == 0 and not compiled["recompile_limit_hit"]
    # the profiler's own hooks are never compiled and never make the user's code recompile
    agent_dir = str(Path(agent_package.__file__).resolve().parent)
    assert all(not (c.path or "").startswith(agent_dir) for c in run.profile.compiles)
    assert [f["function"] for f in compiled["frames"]] == ["forward"]
    assert compiled["frames"][0]["graph_runs_per_step"] == 1.0


def test_summary_and_html_show_compile_time_and_the_findings(runs: dict[str, Run]) -> None:
    run = runs["item_break"]
    console = Console(width=200, record=True)
    console.print(render_summary(run.report))
    text = console.export_text()
    assert "torch.compile: " in text and "not counted as step time" in text
    assert f"TTR501 {run.script.name}:{run.line('BREAK')}" in text and "fix: Move the .item()" in text
    html = render_html(run.report, run.folder)
    assert "id='compile'" in html
    assert "TTR501" in html and "evidence and fixes" in html and "capture_scalar_outputs" in html
