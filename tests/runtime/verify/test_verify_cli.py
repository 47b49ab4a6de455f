"""``torchtriage fix --verify`` on real CPU runs: the loader fix measured faster and kept, the logging fixes
measured with their loss trajectory unchanged, a script that cannot run, and the verify.json contract."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from torchtriage.runtime.verify import load_schema

DATA = Path(__file__).resolve().parents[2] / "data" / "runtime" / "verify"


def _verify(tmp_path: Path, script: str, *options: str, timeout: float = 400) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """Copy ``script`` into tmp_path and run ``fix --verify`` on it; (process, the copy, the verify folder)."""
    copy = tmp_path / script
    shutil.copy(DATA / script, copy)
    out = tmp_path / "verify"
    command = [sys.executable, "-m", "torchtriage", "fix", "--verify", "--quiet", "--repeat", "2", "--out", str(out), *options, str(copy)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    return proc, copy, out


def _fix(document: dict[str, Any], code: str, source: str) -> dict[str, Any]:
    found = [f for f in document["fixes"] if f["code"] == code and f["source"] == source]
    assert len(found) == 1, [(f["code"], f["source"]) for f in document["fixes"]]
    return found[0]


@pytest.fixture(scope="module")
def loader_applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path, Path, str]:
    """The loader-bound script verified with --apply, text output (one real verification, ~30 s)."""
    tmp_path = tmp_path_factory.mktemp("loader")
    original = (DATA / "loader_bound.py").read_text(encoding="utf-8")
    proc, copy, out = _verify(tmp_path, "loader_bound.py", "--apply")
    return proc, copy, out, original


def test_loader_fix_is_measured_faster_kept_and_written(loader_applied: tuple[Any, Path, Path, str]) -> None:
    proc, copy, out, original = loader_applied
    assert proc.returncode == 0, proc.stdout + proc.stderr
    document = json.loads((out / "verify.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, load_schema())
    assert document["baseline"]["bottleneck"] == "data_loading"
    assert document["baseline"]["runs"] == 2 and document["repeat"] == 2
    workers = _fix(document, "TT302", "static")
    # Four workers read four batches side by side: the whole interval lies beyond the 5% floor.
    assert workers["change"] == "faster" and workers["helps"]
    assert workers["interval"]["high_ms"] < -workers["threshold_ms"] < 0
    assert workers["after_ms"] < workers["before_ms"] / 2
    assert workers["interval"]["runs"] == {"before": 2, "after": 2}
    # The same seed and the same batches: the fix moves the reads, not the arithmetic.
    assert workers["losses"]["compared"] >= 10 and workers["losses"]["changed"] is False
    assert workers["losses"]["max_relative_diff"] == 0.0
    assert "+loader = DataLoader(SlowStorage(), batch_size=32, shuffle=True, num_workers=4)" in workers["diff"]
    assert {"code": "TT302", "line": workers["line"]} in document["kept"]
    # The runtime advice (loader-bound verdict) is a candidate of its own, measured the same way.
    runtime = _fix(document, "TTR302", "runtime")
    assert runtime["status"] == "measured" and runtime["interval"] is not None
    assert "num_workers=" in runtime["diff"] and "persistent_workers=True" in runtime["diff"]
    # Each fix's run folder holds its comparison with the baseline.
    assert json.loads(Path(workers["compare_json"]).read_text(encoding="utf-8"))["step_time"]["change"] == "faster"
    # --apply wrote the kept fixes; the hidden fixed copies are gone.
    assert document["applied"] is True
    text = copy.read_text(encoding="utf-8")
    assert text != original and "num_workers=4" in text
    assert not list(copy.parent.glob(".loader_bound.torchtriage-verify-*"))


def test_loader_text_output_names_each_fix_its_change_and_interval(loader_applied: tuple[Any, Path, Path, str]) -> None:
    proc, copy, out, _ = loader_applied
    text = " ".join(proc.stdout.split())  # rich wraps at the terminal width
    line = _fix(json.loads((out / "verify.json").read_text(encoding="utf-8")), "TT302", "static")["line"]
    assert "Baseline:" in text and "bottleneck: data_loading" in text
    assert f"TT302 (line {line}): Set num_workers=4" in text
    assert "faster (" in text and "95% interval" in text and "over 20 and 20 steps of 2 and 2 runs" in text
    assert "Wrote the fixes that help (TT302" in text
    assert str(out / "verify.json") in text


def test_logging_fixes_are_measured_with_the_loss_unchanged(tmp_path: Path) -> None:
    proc, copy, out = _verify(tmp_path, "item_print.py", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    jsonschema.validate(document, load_schema())
    assert document == json.loads((out / "verify.json").read_text(encoding="utf-8"))
    printing = [f for f in document["fixes"] if f["code"] == "TT102"]
    assert sorted(f["line"] for f in printing) == [17, 18]  # print(loss) and the f-string with .item()
    for fix in printing:
        assert fix["status"] == "measured" and fix["applicability"] == "unsafe"
        assert fix["change"] in ("faster", "slower", "none") and fix["interval"] is not None
        assert fix["losses"]["compared"] >= 10 and not fix["losses"]["changed"]
        assert "if step % 100 == 0:" in fix["diff"]
    helping = [f for f in printing if f["helps"]]
    assert (document["combined"] is not None) == (len(helping) >= 2)
    assert document["applied"] is False
    assert copy.read_text(encoding="utf-8") == (DATA / "item_print.py").read_text(encoding="utf-8")
    assert bool(document["diff"]) == bool(helping)


def test_a_script_that_cannot_step_measures_nothing(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("import torch\nfrom torch.utils.data import DataLoader\n"
                      "loader = DataLoader(list(range(10)), batch_size=2)\nraise RuntimeError('no data here')\n", encoding="utf-8")
    out = tmp_path / "verify"
    proc = subprocess.run([sys.executable, "-m", "torchtriage", "fix", "--verify", "--quiet", "--format", "json", "--out", str(out),
                           str(script)], capture_output=True, text=True, timeout=200, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    document = json.loads(proc.stdout)
    jsonschema.validate(document, load_schema())
    assert document["baseline"]["status"] == "raised" and "no data here" in document["baseline"]["message"]
    assert document["baseline"]["step_time_ms"] is None and document["fixes"] == []
    assert not list(tmp_path.glob(".broken.torchtriage-verify-*"))


def test_usage_errors(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "torchtriage", "fix", "--verify", *args], capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)

    assert "takes a script" in run().stderr
    assert "no such script" in run("missing.py").stderr
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    assert run("--repeat", "0", "a.py").returncode == 2
    (tmp_path / "latin.py").write_bytes(b"# caf\xe9\nx = 1\n")
    latin = run("latin.py")
    assert latin.returncode == 2 and "is not UTF-8 text" in latin.stderr and "Traceback" not in latin.stderr
