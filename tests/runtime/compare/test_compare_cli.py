"""``torchtriage compare`` as a command: the table at 80 columns and in pipes, --format json, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from compare_support import line_of, loader_script, write_run

LOADER_BOUND = {"data_loading": 0.8, "compute": 0.2}
FIXED = {"data_loading": 0.15, "compute": 0.85}
BEFORE, AFTER = loader_script(0), loader_script(2, "print('training')\n")


def compare_cli(*args: str, columns: int = 80, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS=str(columns))  # what a pipe gets when nothing says otherwise
    return subprocess.run([sys.executable, "-m", "torchtriage", "compare", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    script = tmp_path / "a_training_script_with_a_long_name.py"
    before = {"time.sleep": ("data_loading", 40.0), "cross_entropy": ("compute", 8.0), "return torch.full": ("data_loading", 1.2)}
    after = {"time.sleep": ("data_loading", 1.5), "cross_entropy": ("compute", 8.1), "return torch.full": ("data_loading", 1.1)}
    write_run(tmp_path / "runs" / "1-before", script, BEFORE, [50.0, 51.0, 49.0], LOADER_BOUND, before)
    write_run(tmp_path / "runs" / "2-after", script, AFTER, [12.0, 11.0, 12.5], FIXED, after)
    return tmp_path / "runs"


@pytest.mark.parametrize("columns", [80, 60])
def test_the_table_fits_the_terminal_and_pins_the_numbers(runs: Path, columns: int) -> None:
    proc = compare_cli(str(runs / "1-before"), str(runs / "2-after"), columns=columns)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    table = [line for line in out.splitlines() if not line.startswith(("compare.json: ", "report.html: "))]
    assert all(len(line) <= columns for line in table), out  # all but the paths, which stay whole to be copied
    assert f"compare.json: {runs / '2-after' / 'compare.json'}" in out.splitlines()
    assert "Compared: 1-before \u2192 2-after" in out
    words = " ".join(out.split())  # the verdict wraps at the terminal's width
    assert "4.2\u00d7 faster" in words and "the TT302 fix" in words
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "50.00 ms" in rows["step"] and "11.83 ms" in rows["step"] and "\u221238.17 ms" in rows["step"]
    name = "a_training_script_with_a_long_name.py"
    lines = out.splitlines()
    loss_before, loss_after = line_of(BEFORE, "cross_entropy"), line_of(AFTER, "cross_entropy")
    for label, numbers in ((f"{name}:{line_of(BEFORE, 'time.sleep')}", ["40.00", "1.50", "\u221238.50"]),
                           (f"{name}:{loss_before} \u2192 {loss_after}", ["8.00", "8.10", "(+0.10)"])):  # (…): within the spread
        at = next(i for i, line in enumerate(lines) if label in line)
        row = lines[at] if columns >= 80 else lines[at - 1]  # narrow: the place goes under the numbers
        assert row.split()[:3] == numbers, out
    assert f"Fixed: TT302 at {name}:{line_of(BEFORE, 'DataLoader(')} (line changed)" in words
    assert (runs / "2-after" / "compare.json").is_file()


def test_json_format_and_no_write(runs: Path) -> None:
    proc = compare_cli(str(runs / "1-before" / "report.json"), str(runs / "2-after"), "--format", "json", "--no-write")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["verdict"]["change"] == "faster" and document["before"]["run_dir"] == str(runs / "1-before")
    assert not (runs / "2-after" / "compare.json").exists()


def test_baseline_last_finds_the_run_before(runs: Path) -> None:
    report = runs / "1-before" / "report.json"
    data = json.loads(report.read_text())
    data["created"] = "2020-01-01T00:00:00+00:00"
    report.write_text(json.dumps(data))
    proc = compare_cli(str(runs / "2-after"), "--baseline", "last", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["before"]["run_dir"] == str(runs / "1-before")
    first = compare_cli(str(runs / "1-before"), "--baseline", "last")
    assert first.returncode == 2 and "no earlier successful run of a_training_script_with_a_long_name.py" in first.stderr


def test_usage_errors_exit_2_with_the_reason(tmp_path: Path, runs: Path) -> None:
    (tmp_path / "not-a-run").mkdir()
    cases = [
        ((str(runs / "1-before"),), "give two run folders"),
        ((str(runs / "1-before"), str(runs / "2-after"), "--baseline", "last"), "--baseline last takes one run folder"),
        ((str(runs / "1-before"), str(tmp_path / "not-a-run")), "has no report.json"),
        ((str(tmp_path / "nowhere"), str(runs / "2-after")), "no such run folder"),
    ]
    for args, message in cases:
        proc = compare_cli(*args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
