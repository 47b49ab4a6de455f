"""torchtriage lab end to end: real runs of small training scripts on the CPU, one child process per configuration."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from process_support import alive

from torchtriage.runtime.lab.report import load_lab_schema

pytestmark = pytest.mark.slow

LAB_DATA = Path(__file__).resolve().parents[2] / "data" / "lab"
FAST = ["--steps", "6", "--warmup", "2"]
VALIDATOR = jsonschema.Draft202012Validator(load_lab_schema())


def lab_cli(tmp_path: Path, script: str, *options: str, script_args: tuple[str, ...] = (), env: dict[str, str] | None = None,
            timeout: float = 400) -> tuple[subprocess.CompletedProcess[str], Path, dict[str, Any]]:
    """Run ``torchtriage lab`` on a test script; the process, the lab folder and lab.json (validated against the schema)."""
    out = tmp_path / "lab"
    command = [sys.executable, "-m", "torchtriage", "lab", "--quiet", "--out", str(out), *FAST, *options, str(LAB_DATA / script)]
    if script_args:
        command += ["--", *script_args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=dict(os.environ, COLUMNS="160", **(env or {})))
    assert (out / "lab.json").is_file(), proc.stdout + proc.stderr
    document = json.loads((out / "lab.json").read_text())
    VALIDATOR.validate(document)
    return proc, out, document


def _no_nan(token: str) -> None:
    raise AssertionError(f"lab.json holds {token}")


def rows_by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in document["rows"]}


def test_three_configurations_measure_with_plausible_numbers(tmp_path: Path) -> None:
    proc, out, lab = lab_cli(tmp_path, "lab_train.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [r["name"] for r in lab["rows"]] == ["fp32", "bf16", "bf16+compile"]
    rows = rows_by_name(lab)
    for row in lab["rows"]:
        s = row["step_time_ms"]
        assert row["status"] == "measured" and row["reason"] is None, row
        assert row["steps_measured"] == 6 and row["models"] == ["Classifier"]
        assert 0 < s["min"] <= s["q1"] <= s["median"] <= s["q3"] <= s["max"] and s["iqr"] == pytest.approx(s["q3"] - s["q1"], abs=1e-3)
        assert row["steps_per_s"] == pytest.approx(1000 / s["median"], rel=1e-3)
        assert row["batch_size"] == 48  # the leading dim of the tensors reaching the model
        assert row["samples_per_s"] == pytest.approx(48 * row["steps_per_s"], rel=1e-3)
        assert row["model_calls"] == 6  # one forward per measured step
        assert row["memory_measure"] == "cpu_peak_rss_growth" and row["peak_memory_bytes"] >= 0
        assert row["loss_finite"] and 1.0 < row["final_loss"] < 4.0  # cross-entropy over 10 classes starts near ln 10
    # autocast really ran around the model: its output is bf16 in both bf16 rows, fp32 in the baseline
    assert [rows[n]["output_dtype"] for n in ("fp32", "bf16", "bf16+compile")] == ["float32", "bfloat16", "bfloat16"]
    # the compiled forward was used for every measured call, and compiling took time outside the measured steps
    compiled = rows["bf16+compile"]
    assert compiled["compiled_forward_calls"] == compiled["model_calls"] == 6
    assert compiled["compile_s"] > 0 and compiled["graphs"] >= 1 and compiled["compiles"] >= 1
    assert compiled["graph_breaks"] == 0 and compiled["recompiles"] == 0
    assert rows["fp32"]["compile_s"] is None and rows["fp32"]["compiled_forward_calls"] == 0
    # same seed, same steps: the low-precision losses stay within the tolerance of fp32's
    assert rows["fp32"]["loss_check"] == "baseline"
    for name in ("bf16", "bf16+compile"):
        assert rows[name]["loss_check"] == "ok" and rows[name]["loss_vs_fp32"] <= 0.05
        # lab.json rounds the speedup to 4 places: abs=5e-5 is that rounding (a busy CPU can make bf16 ~160x slower, 0.0063)
        assert rows[name]["speedup_vs_fp32"] == pytest.approx(rows["fp32"]["step_time_ms"]["median"] / rows[name]["step_time_ms"]["median"], rel=1e-3, abs=5e-5)
        assert rows[name]["change_vs_fp32"] in ("faster", "slower", "no_measurable_change")
    reading = lab["reading"]
    assert reading["precision"]["from"] == "fp32" and reading["precision"]["to"] == "bf16"
    assert reading["compile"]["from"] == "bf16" and reading["compile"]["to"] == "bf16+compile"
    assert reading["lines"] and reading["lines"][0]["key"].startswith("precision_")
    # each run kept its own folder; the table and the reading are printed
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["bf16", "bf16-compile", "fp32"]
    assert "lab_train:" not in (out / "fp32" / "output.log").read_text()  # stopped after the measured steps, before its last print
    assert re.search(r"bf16\+compile\s+\d+\.\d+ \(\d+\.\d+\)", proc.stdout) and "Reading" in proc.stdout
    html = (out / "lab.html").read_text()
    assert html.count("class='bar'") == 3 and html.count("class='spread'") == 3
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html and "<script" not in html


def test_a_compile_that_fails_is_a_row_with_its_reason_and_the_others_still_measure(tmp_path: Path) -> None:
    """No working C++ compiler for inductor (a fresh cache, so nothing compiled earlier is reused)."""
    env = {"CXX": "/bin/false", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-cache")}
    proc, _, lab = lab_cli(tmp_path, "lab_train.py", env=env)
    assert proc.returncode == 1
    rows = rows_by_name(lab)
    failed = rows["bf16+compile"]
    assert failed["status"] == "failed" and failed["reason"] == "compile_failed"
    assert "C++ compiler" in failed["message"] and failed["step_time_ms"] is None
    assert failed["runs"][0]["failure"] == "compile_failed"
    for name in ("fp32", "bf16"):
        assert rows[name]["status"] == "measured" and rows[name]["step_time_ms"]["median"] > 0
    assert lab["reading"]["compile"] is None
    assert any(line["key"] == "compile_unknown" and "compile_failed" in line["text"] for line in lab["reading"]["lines"])
    assert "bf16+compile: failed (compile_failed)" in proc.stdout


def test_a_script_that_raises_gives_every_row_its_reason(tmp_path: Path) -> None:
    proc, _, lab = lab_cli(tmp_path, "lab_train.py", script_args=("--raise-at", "1"))
    assert proc.returncode == 1
    for row in lab["rows"]:
        assert row["status"] == "failed" and row["reason"] == "raised"
        assert row["message"] == "ValueError: bad batch at step 1"
        assert row["step_time_ms"] is None and row["runs"][0]["status"] == "raised"
    assert lab["reading"]["verdict"] == "incomplete"
    assert "fp32: failed (raised): ValueError: bad batch at step 1" in proc.stdout


def test_a_script_with_too_few_steps_says_so(tmp_path: Path) -> None:
    proc, _, lab = lab_cli(tmp_path, "lab_train.py", "--modes", "fp32", script_args=("--steps", "4"))
    assert proc.returncode == 1
    [row] = lab["rows"]
    assert row["status"] == "failed" and row["reason"] == "too_few_steps"
    assert "--warmup 2" in row["message"] and "pass the script more steps" in row["message"]


def test_modes_that_make_no_sense_on_a_cpu_are_skipped_with_a_reason(tmp_path: Path) -> None:
    proc, out, lab = lab_cli(tmp_path, "lab_train.py", "--modes", "fp16,reduce-overhead")
    assert proc.returncode == 0
    rows = rows_by_name(lab)
    assert list(rows) == ["fp32", "fp16", "bf16+reduce-overhead"]
    assert rows["fp32"]["status"] == "measured"
    assert rows["fp16"]["status"] == "skipped" and rows["fp16"]["reason"] == "skipped_on_cpu" and "GPU recipe" in rows["fp16"]["message"]
    assert rows["bf16+reduce-overhead"]["status"] == "skipped" and "CUDA graphs" in rows["bf16+reduce-overhead"]["message"]
    assert [p.name for p in out.iterdir() if p.is_dir()] == ["fp32"]  # nothing else ran


def test_fp16_overflow_makes_its_row_fail_on_the_loss_while_bf16_measures(tmp_path: Path) -> None:
    """fp16 forced on the CPU (--run-skipped): activations above 65504 overflow, the injected GradScaler skips steps."""
    proc, _, lab = lab_cli(tmp_path, "overflow_train.py", "--modes", "bf16,fp16", "--run-skipped")
    assert proc.returncode == 1
    rows = rows_by_name(lab)
    fp16 = rows["fp16"]
    assert fp16["status"] == "failed" and fp16["reason"] == "loss_not_finite" and fp16["loss_check"] == "not_finite"
    assert fp16["final_loss"] is None and fp16["loss_finite"] is False
    json.loads((tmp_path / "lab" / "lab.json").read_text(), parse_constant=_no_nan)  # strict JSON: no NaN or Infinity
    assert fp16["grad_scaler"] and fp16["output_dtype"] == "float16"
    assert fp16["scaler_skipped_steps"] >= 6 and any("GradScaler skipped" in note for note in fp16["notes"])
    assert fp16["step_time_ms"]["median"] > 0  # its steps were still timed
    assert rows["bf16"]["status"] == "measured" and rows["bf16"]["loss_check"] == "ok"  # bf16 has fp32's range


def test_repeats_are_interleaved_and_widen_the_spread(tmp_path: Path) -> None:
    proc, out, lab = lab_cli(tmp_path, "lab_train.py", "--modes", "bf16", "--repeat", "2")
    assert proc.returncode == 0
    for row in lab["rows"]:
        assert [run["repeat"] for run in row["runs"]] == [1, 2] and row["steps_measured"] == 12
        s = row["step_time_ms"]
        assert len(s["run_medians"]) == 2
        assert s["low"] <= min(s["q1"], *s["run_medians"]) and s["high"] >= max(s["q3"], *s["run_medians"])
    order = ["fp32", "bf16", "fp32-r2", "bf16-r2"]
    ended = [(out / name / "agent.json").stat().st_mtime for name in order]
    assert ended == sorted(ended)  # fp32, bf16, fp32, bf16



def test_sigterm_stops_the_run_in_progress_and_nothing_more_runs(tmp_path: Path) -> None:
    script = tmp_path / "never_steps.py"
    script.write_text((LAB_DATA / "never_steps.py").read_text())
    out = tmp_path / "lab"
    lab = subprocess.Popen([sys.executable, "-m", "torchtriage", "lab", "--quiet", "--out", str(out), str(script)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    pid_file = Path(str(script) + ".pid")
    deadline = time.monotonic() + 120
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = int(pid_file.read_text())
    lab.send_signal(signal.SIGTERM)
    output, _ = lab.communicate(timeout=60)
    assert lab.returncode == 130, output
    assert not alive(pid)
    document = json.loads((out / "lab.json").read_text())
    VALIDATOR.validate(document)
    rows = rows_by_name(document)
    assert rows["fp32"]["status"] == "failed" and rows["fp32"]["reason"] == "interrupted"
    for name in ("bf16", "bf16+compile"):
        assert rows[name]["status"] == "not_run" and rows[name]["reason"] == "interrupted"
    assert [p.name for p in out.iterdir() if p.is_dir()] == ["fp32"]


def test_a_script_that_never_steps_is_not_run_again(tmp_path: Path) -> None:
    script = tmp_path / "never_steps.py"
    script.write_text((LAB_DATA / "never_steps.py").read_text())
    out = tmp_path / "lab"
    proc = subprocess.run([sys.executable, "-m", "torchtriage", "lab", "--quiet", "--no-step-timeout", "20", "--out", str(out), str(script)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    document = json.loads((out / "lab.json").read_text())
    VALIDATOR.validate(document)
    rows = rows_by_name(document)
    assert rows["fp32"]["reason"] == "no_steps" and "no optimizer step" in rows["fp32"]["message"]
    assert rows["bf16"]["status"] == "not_run" and rows["bf16"]["reason"] == "no_steps"
    assert "the fp32 run saw no training step" in rows["bf16+compile"]["message"]
    assert not alive(int(Path(str(script) + ".pid").read_text()))
