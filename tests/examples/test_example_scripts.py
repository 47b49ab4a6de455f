"""The example scripts run (real torch, CPU) and the linter reports the hazards each one shows.

Expected codes are checked against the rules that are registered, so a code
whose rule has not landed yet is reported as skipped rather than silently
passing; tuned counterparts must be (nearly) clean.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchtriage.analysis import analyze_source
from torchtriage.analysis.rules import all_rules
from torchtriage.config import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# script -> codes the linter must report on it (when the rule exists)
EXPECTED = {
    "slow_loader.py": {"TT301", "TT302", "TT303", "TT306", "TT503", "TT504"},
    "sync_every_step.py": {"TT101", "TT102", "TT103"},
    "graph_leak.py": {"TT201"},
    "device_moves.py": {"TT301", "TT303", "TT305", "TT503"},
    "eval_no_grad.py": {"TT101", "TT201", "TT501"},
    "tiny_ops.py": set(),
    "big_matmul.py": set(),
}
# Codes that would be false alarms on scripts without per-step syncs, leaks or transfers.
STEP_HAZARDS = {"TT101", "TT102", "TT103", "TT104", "TT201", "TT202", "TT203", "TT301", "TT305"}
TUNED = sorted(p.name for p in (EXAMPLES / "tuned").glob("*.py"))
REGISTERED = {rule.code for rule in all_rules()}


def lint(path: Path) -> list:
    return analyze_source(path.read_text(encoding="utf-8"), str(path), Settings())


def run_script(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(path), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES,
    )


def test_every_script_is_listed_and_has_a_readme_entry():
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    assert scripts == set(EXPECTED)
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for name in [*scripts, "notebook_training.ipynb", *(f"tuned/{t}" for t in TUNED)]:
        assert name in readme, f"{name} is not described in examples/README.md"
    assert set(TUNED) <= scripts


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_linter_reports_the_hazards_of_each_example(name):
    findings = lint(EXAMPLES / name)
    codes = {f.code for f in findings}
    assert "TT999" not in codes and "TT000" not in codes, findings
    expected = EXPECTED[name] & REGISTERED
    missing = expected - codes
    assert not missing, f"{name}: expected {sorted(expected)}, got {sorted(codes)}"
    if not EXPECTED[name]:
        assert not codes & STEP_HAZARDS, f"{name} has no per-step hazards, got {findings}"
    elif not expected:
        pytest.skip(f"rules {sorted(EXPECTED[name])} not registered yet")


@pytest.mark.parametrize("name", TUNED)
def test_tuned_counterparts_are_nearly_clean(name):
    findings = lint(EXAMPLES / "tuned" / name)
    fixed = EXPECTED[name] & {f.code for f in findings}
    assert not fixed, f"tuned/{name} still shows {sorted(fixed)}: {findings}"
    assert len(findings) <= 1, findings
    untuned = lint(EXAMPLES / name)
    assert len(untuned) > len(findings)


@pytest.mark.slow
@pytest.mark.parametrize("path", [*sorted(EXPECTED), *(f"tuned/{t}" for t in TUNED)])
def test_example_runs_with_few_steps(path):
    result = run_script(EXAMPLES / path, "--steps", "3")
    assert result.returncode == 0, result.stderr[-2000:]
    last = result.stdout.strip().splitlines()[-1]
    stem = Path(path).stem
    assert stem in last and ("3 steps" in last or "3 batches" in last), last
    assert "nan" not in last.lower()


def test_examples_are_deterministic():
    first = run_script(EXAMPLES / "sync_every_step.py", "--steps", "5")
    second = run_script(EXAMPLES / "sync_every_step.py", "--steps", "5")
    assert first.returncode == second.returncode == 0
    assert first.stdout.splitlines()[-1] == second.stdout.splitlines()[-1]


def _notebook_code() -> str:
    notebook = json.loads((EXAMPLES / "notebook_training.ipynb").read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    lines = [line for cell in cells for line in cell.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines) + "\n"


def test_notebook_has_magics_and_loader_then_loop():
    notebook = json.loads((EXAMPLES / "notebook_training.ipynb").read_text(encoding="utf-8"))
    code_cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code_cells[0].startswith("%load_ext torchtriage") and "\n!python " in code_cells[0]
    assert "DataLoader(" in code_cells[0] and "for xb, yb in loader" in code_cells[1]


@pytest.mark.slow
def test_notebook_code_runs(tmp_path):
    script = tmp_path / "notebook_training.py"
    script.write_text(_notebook_code(), encoding="utf-8")
    result = run_script(script)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1].startswith("notebook_training: 30 steps")


def test_notebook_linted_across_cells():
    notebooks = pytest.importorskip("torchtriage.analysis.notebooks")
    text = (EXAMPLES / "notebook_training.ipynb").read_text(encoding="utf-8")
    findings = notebooks.analyze_notebook(text, "notebook_training.ipynb", Settings())
    codes = {f.code for f in findings}
    assert "TT000" not in codes and "TT999" not in codes, findings
    expected = {"TT102", "TT201"} & REGISTERED
    assert expected <= codes, f"expected {sorted(expected)}, got {sorted(codes)}"


def test_the_readmes_table_says_what_check_examples_reports():
    """examples/README.md's last column is what ``torchtriage check examples/`` (the whole folder, as one
    project) reports for each script: the CLI, run for real."""
    result = subprocess.run([sys.executable, "-m", "torchtriage", "check", "--format", "json", "--exit-zero", str(EXAMPLES)],
                            capture_output=True, text=True, timeout=300, cwd=EXAMPLES)
    assert result.returncode == 0, result.stderr[-2000:]
    reported: dict[str, set[str]] = {}
    for finding in json.loads(result.stdout):
        path = Path(finding["path"])
        if path.parent.name != "tuned":
            reported.setdefault(path.name, set()).add(finding["code"])
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z_]+\.(?:py|ipynb))` \|.*\| ([^|]*) \|$", readme, re.M)
    assert {name for name, _ in rows} == set(EXPECTED) | {"notebook_training.ipynb"}
    for name, column in rows:
        assert set(re.findall(r"TT\d{3}", column)) == reported.get(name, set()), name
