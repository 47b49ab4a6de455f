"""``%%torchtriage`` and ``%torchtriage_check`` in a real ipykernel (jupyter_client; real torch, CPU)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kernel_support import Kernel

MIME = "application/vnd.torchtriage.profile+json"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nb")
    k = Kernel(folder)
    assert k.run("%load_ext torchtriage").reply["status"] == "ok"
    k.folder = folder
    yield k
    k.close()


def cell(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def profile(kernel: Kernel, options: str, body: str, **kw):
    out = kernel.run(f"%%torchtriage {options}\n" + cell(body), **kw)
    assert out.reply["status"] == "ok", out.reply
    return out, out.bundle(MIME)


LOADER_CELL = """
import time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 4096
    def __getitem__(self, i):
        time.sleep(0.004)
        return torch.randn(16), torch.tensor(i % 2)

loader = DataLoader(Slow(), batch_size=4)
model = nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in loader:
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_training_cell_gives_its_bottleneck_and_hot_line_in_cell_lines(kernel):
    out, bundle = profile(kernel, "--active 3 --out run-loader", LOADER_CELL)
    data = bundle[MIME]
    report = data["report"]
    assert data["status"]["status"] == "stopped_after_window"
    assert report["step_detection"] == "optimizer" and report["steps_profiled"] == 3
    assert report["bottleneck"]["kind"] == "data_loading", report["bottleneck"]
    top = report["hotspots"][0]
    # Line numbers are the cell's own: line 1 is the %%torchtriage line, so the sleep (body line 9) is on line 10.
    assert (Path(top["path"]).name, top["line"], top["source"]) == (f"cell-{data['notebook']['execution_count']}.py", 10, "time.sleep(0.004)")
    assert top["path"] == data["notebook"]["cell_path"]
    assert data["notebook"]["first_line"] == 2
    # Fallbacks for front ends without our renderer; the run folder is on disk.
    assert "data loading" in bundle["text/plain"].lower() and "cell-" in bundle["text/plain"]
    assert "<svg" in bundle["text/html"] and "torchtriage-report" in bundle["text/html"]
    run_dir = Path(data["run_dir"])
    assert run_dir == kernel.folder / "run-loader"
    assert json.loads((run_dir / "report.json").read_text())["bottleneck"]["kind"] == "data_loading"
    # The cell's state stays in the kernel.
    assert kernel.run("print(type(model).__name__)").stdout.strip() == "Linear"


def test_hot_code_defined_in_an_earlier_cell_names_that_cell(kernel):
    defined = kernel.run(cell("""
        import torch
        def slow_features(x):
            out = []
            for row in x:
                out.append(row.sum().item())
            return torch.tensor(out)
    """))
    number = defined.reply["execution_count"]
    _, bundle = profile(kernel, "--active 3", """
        from torch import nn
        model = nn.Linear(8, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(40):
            x = torch.randn(256, 8)
            loss = model(x).sum() + slow_features(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)
    data = bundle[MIME]
    hot = data["report"]["hotspots"]
    top = next(h for h in hot if h["source"] == "out.append(row.sum().item())")
    assert top in hot[:3] and top["line"] == 5, hot[:3]
    cells = {c["path"]: c["execution_count"] for c in data["notebook"]["cells"]}
    assert cells[top["path"]] == number
    assert f"is cell In [{number}]" in bundle["text/plain"]


def test_cell_without_a_loop_is_one_step(kernel):
    _, bundle = profile(kernel, "", """
        import torch
        a = torch.randn(256, 256)
        b = a @ a
        c = (b @ a).relu().sum()
    """)
    report = bundle[MIME]["report"]
    assert bundle[MIME]["status"]["status"] == "completed"
    assert report["steps_profiled"] == 1 and report["step_detection"] == "cell"
    assert report["hotspots"], report


def test_raising_cell_keeps_the_kernel_and_says_why(kernel):
    out, bundle = profile(kernel, "--active 2 --full", """
        import torch
        w = torch.randn(8, 8, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for step in range(50):
            (w @ w).sum().backward()
            opt.step()
            if step == 20:
                raise ValueError("bad batch at step 20")
    """)
    assert bundle[MIME]["status"] == {"status": "raised", "message": "ValueError: bad batch at step 20"}
    assert bundle[MIME]["report"]["steps_profiled"] == 2  # the window recorded before the error is kept
    assert "ValueError: bad batch at step 20" in out.stderr and "line 9" in out.stderr
    assert "raised" in bundle["text/plain"]
    assert kernel.alive()


def test_interrupted_cell_keeps_the_recorded_window_and_the_kernel(kernel):
    out, bundle = profile(kernel, "--active 2 --full", """
        import time, torch
        w = torch.randn(8, 8, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        while True:
            (w @ w).sum().backward()
            opt.step()
            time.sleep(0.02)
    """, interrupt_after=6.0)
    data = bundle[MIME]
    assert data["status"]["status"] == "interrupted" and "recorded window is kept" in data["status"]["message"]
    assert data["report"]["steps_profiled"] == 2
    assert "interrupted" in out.stderr
    assert kernel.alive()


def test_timeout_stops_the_cell_and_keeps_the_window(kernel):
    out, bundle = profile(kernel, "--active 2 --full --timeout 4", """
        import time, torch
        w = torch.randn(8, 8, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        while True:
            (w @ w).sum().backward()
            opt.step()
            time.sleep(0.02)
    """)
    data = bundle[MIME]
    assert data["status"]["status"] == "timeout" and "--timeout 4.0 s" in data["status"]["message"]
    assert data["report"]["steps_profiled"] == 2
    assert kernel.alive()


def test_bad_option_prints_usage_and_runs_nothing(kernel):
    out = kernel.run("%%torchtriage --activ 3\nraise SystemExit")
    assert out.reply["status"] == "ok" and "unknown options: --activ" in out.stderr and "--active" in out.stderr


def test_check_lints_the_cells_run_so_far(kernel):
    first = kernel.run(cell("""
        import torch
        w = torch.randn(4, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
    """)).reply["execution_count"]
    loop = kernel.run(cell("""
        for step in range(3):
            loss = (w * w).sum()
            loss.backward()
            opt.step()
            print(loss)
    """)).reply["execution_count"]
    timed = kernel.run(cell("""
        %%time
        for step in range(3):
            loss = (w * w).sum()
            loss.backward()
            print(loss)
    """)).reply["execution_count"]
    out = kernel.run("%torchtriage_check")
    bundle = out.bundle("application/vnd.torchtriage.findings+json")
    findings = bundle["application/vnd.torchtriage.findings+json"]["findings"]
    found = [{"code": f["code"], "execution_count": f["execution_count"], "line": f["line"]} for f in findings]
    assert {"code": "TT102", "execution_count": loop, "line": 5} in found
    assert f"In [{loop}] line 5: TT102" in bundle["text/plain"]
    # A cell magic's body is checked as typed (IPython's ``In`` holds it as a string argument).
    assert {"code": "TT102", "execution_count": timed, "line": 5} in found
    assert first < loop < timed


def test_static_findings_see_the_cells_as_one_notebook(kernel):
    """The loader is built in a cell no time is charged to: the profile still links the TT302 the editor
    shows on it (the cells analysed as one notebook, as %torchtriage_check does), on that cell's file."""
    assert kernel.run(cell("""
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, Dataset

        class Windows(Dataset):
            def __len__(self):
                return 4096
            def __getitem__(self, i):
                series = torch.sin(torch.arange(4000, dtype=torch.float32) * (i + 1))
                return series.unfold(0, 16, 16).mean(0), torch.tensor(i % 2)
    """)).reply["status"] == "ok"
    built = kernel.run(cell("""
        ds = Windows()
        model = nn.Linear(16, 2)
        loader = DataLoader(ds, batch_size=16)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    """))
    assert built.reply["status"] == "ok", built.reply
    number = built.reply["execution_count"]
    _, bundle = profile(kernel, "--active 3 --out run-notebook-findings", """
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)
    data = bundle[MIME]
    cells = {c["execution_count"]: c["path"] for c in data["notebook"]["cells"]}
    report = json.loads((Path(data["run_dir"]) / "report.json").read_text())
    assert report["bottleneck"]["kind"] == "data_loading", report["bottleneck"]
    tt302 = [f for f in report["static_findings"] if f["code"] == "TT302" and f["path"] == cells.get(number)]
    assert [(f["line"], f["category"]) for f in tt302] == [(3, "data_loading")], report["static_findings"]
    assert tt302[0]["category_share"] == report["breakdown"]["data_loading"] > 0.3
    assert "TT302" in json.dumps(report["bottleneck"]["evidence"]), report["bottleneck"]
    assert not [f for f in report["runtime_findings"] if f["code"] == "TTR302"], report["runtime_findings"]
    # The loop line is where the loading is charged.
    loop = [h for h in report["hotspots"] if h["path"] == data["notebook"]["cell_path"] and h["line"] == 2]
    assert loop and loop[0]["category"] == "data_loading", report["hotspots"]
    assert data["report"]["static_findings"] == report["static_findings"]
    # under the [tool.torchtriage] settings of the kernel's working directory, as `torchtriage check` there
    pyproject = kernel.folder / "pyproject.toml"
    pyproject.write_text('[tool.torchtriage]\nignore = ["TT302"]\n')
    try:
        _, bundle = profile(kernel, "--active 2", "for x, y in loader:\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()\n")
    finally:
        pyproject.unlink()
    assert not [f for f in bundle[MIME]["report"]["static_findings"] if f["code"] == "TT302"]


@pytest.fixture(scope="module")
def notebook_kernel(tmp_path_factory):
    """A kernel that shows fd-level writes in the cell, as a notebook does."""
    folder = tmp_path_factory.mktemp("nb-fds")
    k = Kernel(folder, watch_fds=True)
    assert k.run("%load_ext torchtriage").reply["status"] == "ok"
    k.folder = folder
    yield k
    k.close()


KINETO_LINE = "USDT:2026-11-22 10:38:36 11139:11139 SyncActivityProfilerHandler.cpp:52] profiler_start"


def _fd2_reaches_the_cell(kernel, marker: str) -> bool:
    """Write ``marker`` to fd 2 in a cell and see it come back as the cell's stderr.  ipykernel forwards
    fd 2 from a reader thread, which can publish after the cell's idle status (then under the next
    cell's header): a few short follow-up cells collect a late line."""
    stderr = kernel.run(f"import os; os.write(2, b'{marker}\\n')").stderr
    for _ in range(4):
        if marker in stderr:
            return True
        stderr += kernel.run("import time; time.sleep(0.25)").stderr
    return marker in stderr


def test_profiler_log_lines_go_to_output_log_not_the_cell(notebook_kernel):
    assert _fd2_reaches_the_cell(notebook_kernel, "fd 2 reaches the cell")  # else the kernel would not show what this test hides
    out, bundle = profile(notebook_kernel, "--active 2 --out run-native", f"""
        import os, sys, torch
        os.write(2, b"{KINETO_LINE}\\n")
        os.write(2, b"a native line from the cell\\n")
        print("a python line from the cell", file=sys.stderr)
        w = torch.randn(8, 8, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for step in range(10):
            (w @ w).sum().backward()
            opt.step()
    """)
    data = bundle[MIME]
    assert data["status"]["status"] == "stopped_after_window"
    assert "a native line from the cell" in out.stderr and "a python line from the cell" in out.stderr
    # torch's own markers (profiler_start/stop, the CPUAllocator warning) are hidden like the cell's fake one
    assert "profiler_start" not in out.stderr and "profiler_stop" not in out.stderr, out.stderr
    assert "CPUAllocator" not in out.stderr, out.stderr
    log = Path(data["run_dir"]) / "output.log"
    text = log.read_text()
    assert KINETO_LINE in text and "a native line from the cell" in text
    assert "profiler_stop" in text  # written by torch itself
    assert data["report"]["trace"]["output_log"] == str(log), data["report"]["trace"]
    # fd 2 is the kernel's again
    assert _fd2_reaches_the_cell(notebook_kernel, "fd 2 after the profile")


def test_interrupted_cell_gives_fd_2_back(notebook_kernel):
    before = notebook_kernel.run("print(os.fstat(2).st_ino)").stdout.strip()
    out, bundle = profile(notebook_kernel, "--active 2 --full", """
        import os, time, torch
        w = torch.randn(8, 8, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        while True:
            (w @ w).sum().backward()
            opt.step()
            os.write(2, b"")
            time.sleep(0.02)
    """, interrupt_after=4.0)
    assert bundle[MIME]["status"]["status"] == "interrupted"
    assert notebook_kernel.run("print(os.fstat(2).st_ino)").stdout.strip() == before
    assert _fd2_reaches_the_cell(notebook_kernel, "still shown")
