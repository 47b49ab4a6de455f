"""``torchtriage check``: exit codes, selection, statistics, fixes and diffs, end to end."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import TRAIN_CUDA, TRAIN_ITEM, write


def test_findings_exit_1_and_ruff_style_text(tt, tmp_path: Path) -> None:
    write(tmp_path / "train.py", TRAIN_CUDA)
    result = tt("check", "train.py", "--select", "TT301")
    assert result.returncode == 1
    assert "train.py:4:9: TT301 [*] " in result.stdout
    assert "Found 1 finding." in result.stdout


def test_clean_file_exits_0(tt, tmp_path: Path) -> None:
    write(tmp_path / "ok.py", "import torch\nx = torch.ones(3)\n")
    result = tt("check", "ok.py")
    assert (result.returncode, result.stdout.strip()) == (0, "All checks passed!")


def test_exit_zero(tt, tmp_path: Path) -> None:
    write(tmp_path / "train.py", TRAIN_CUDA)
    result = tt("check", "--exit-zero", "--select", "TT301", "train.py")
    assert result.returncode == 0
    assert "TT301" in result.stdout


def test_usage_errors_exit_2(tt, tmp_path: Path) -> None:
    missing = tt("check", "nope.py")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert tt("check", "--format", "xml", ".").returncode == 2
    assert tt("check", "--no-such-flag").returncode == 2
    assert tt().returncode == 2  # no command: help, usage error


def test_select_ignore_extend_select(tt, tmp_path: Path) -> None:
    write(tmp_path / "train.py", TRAIN_CUDA + "    total += loss.item()\n")
    codes = lambda result: sorted({f["code"] for f in json.loads(result.stdout)})  # noqa: E731
    assert codes(tt("check", "--format", "json", "--select", "TT301", "train.py")) == ["TT301"]
    assert codes(tt("check", "--format", "json", "--select", "TT3", "--extend-select", "TT101", "train.py")) == [
        "TT101",
        "TT301",
    ]
    both = codes(tt("check", "--format", "json", "--select", "TT101,TT301", "--ignore", "TT301", "train.py"))
    assert both == ["TT101"]
    none = tt("check", "--select", "TT301", "--ignore", "TT3", "train.py")
    assert none.returncode == 0


def test_statistics(tt, tmp_path: Path) -> None:
    write(tmp_path / "a.py", TRAIN_CUDA)
    write(tmp_path / "b.py", TRAIN_CUDA)
    result = tt("check", "--statistics", "--select", "TT301", "a.py", "b.py")
    assert result.returncode == 1
    assert result.stdout.split() == ["2", "TT301", "[*]", "blocking-host-to-device-copy"]


def test_fix_writes_safe_fixes_only(tt, tmp_path: Path) -> None:
    path = write(tmp_path / "train.py", TRAIN_CUDA + "    total += loss.item()\n")
    result = tt("check", "--fix", "--select", "TT101,TT301", "train.py")
    text = path.read_text()
    assert "x.to(device, non_blocking=True)" in text
    assert "loss.item()" in text  # TT101's fix is unsafe
    assert result.returncode == 1  # TT101 remains
    assert "Fixed 1 finding" in result.stderr
    assert [f["code"] for f in json.loads(tt("check", "--format", "json", "--select", "TT101,TT301", "train.py").stdout)] == ["TT101"]


def test_unsafe_fixes(tt, tmp_path: Path) -> None:
    path = write(tmp_path / "train.py", TRAIN_ITEM)
    result = tt("check", "--fix", "--unsafe-fixes", "--select", "TT101", "train.py")
    assert "loss.item()" not in path.read_text()
    assert result.returncode == 0
    compile(path.read_text(), "train.py", "exec")


def test_fix_subcommand_is_check_fix(tt, tmp_path: Path) -> None:
    path = write(tmp_path / "train.py", TRAIN_CUDA)
    assert tt("fix", "--select", "TT301", "train.py").returncode == 0
    assert "non_blocking=True" in path.read_text()


def test_diff_changes_nothing(tt, tmp_path: Path) -> None:
    path = write(tmp_path / "train.py", TRAIN_CUDA)
    before = path.read_bytes()
    result = tt("check", "--diff", "--select", "TT301", "train.py")
    assert result.returncode == 1
    assert path.read_bytes() == before
    assert "--- a/train.py" in result.stdout and "+++ b/train.py" in result.stdout
    assert "-    x = x.to(device)\n+    x = x.to(device, non_blocking=True)\n" in result.stdout
    clean = write(tmp_path / "clean.py", "import torch\n")
    assert tt("check", "--diff", str(clean.name)).returncode == 0


def test_fix_keeps_crlf_and_bytes_elsewhere(tt, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(TRAIN_CUDA.lstrip("\n").replace("\n", "\r\n").encode())
    tt("check", "--fix", "--select", "TT301", "train.py")
    assert path.read_bytes() == TRAIN_CUDA.lstrip("\n").replace("\n", "\r\n").replace(
        "x.to(device)", "x.to(device, non_blocking=True)"
    ).encode()


def test_output_file(tt, tmp_path: Path) -> None:
    write(tmp_path / "train.py", TRAIN_CUDA)
    result = tt("check", "--format", "json", "-o", "report.json", "--select", "TT301", "train.py")
    assert result.returncode == 1 and result.stdout == ""
    assert json.loads((tmp_path / "report.json").read_text())[0]["code"] == "TT301"


def test_json_is_the_documented_schema(tt, tmp_path: Path) -> None:
    write(tmp_path / "train.py", TRAIN_CUDA)
    [finding] = json.loads(tt("check", "--format", "json", "--select", "TT301", "train.py").stdout)
    assert set(finding) >= {"path", "line", "column", "end_line", "end_column", "code", "name", "severity", "message", "fix"}
    assert (finding["path"], finding["line"], finding["column"]) == ("train.py", 4, 9)
    assert finding["fix"]["applicability"] == "safe"


def test_rules_and_explain(tt) -> None:
    rules = tt("rules")
    assert rules.returncode == 0 and "TT301" in rules.stdout and "blocking-host-to-device-copy" in rules.stdout
    listed = json.loads(tt("rules", "--format", "json").stdout)
    assert {"code": "TT301", "name": "blocking-host-to-device-copy"}.items() <= next(
        r for r in listed if r["code"] == "TT301"
    ).items()
    explain = tt("explain", "TT301")
    assert explain.returncode == 0
    assert explain.stdout.startswith("# TT301 blocking-host-to-device-copy")
    assert "## Why" in explain.stdout and "## Fix" in explain.stdout
    assert tt("explain", "tt301").stdout == explain.stdout
    assert tt("explain", "blocking-host-to-device-copy").stdout == explain.stdout
    unknown = tt("explain", "TT9999")
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr


def test_version(tt) -> None:
    result = tt("--version")
    assert result.returncode == 0 and result.stdout.startswith("torchtriage ")


def test_fix_keeps_a_utf8_bom(tt, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(b"\xef\xbb\xbf" + TRAIN_CUDA.lstrip("\n").encode())
    assert tt("check", "--fix", "--select", "TT301", "train.py").returncode == 0
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbfimport torch") and b"non_blocking=True" in data


def test_checking_files_without_fixable_findings_never_imports_libcst(tmp_path) -> None:
    """libcst (~165 ms to import) is only loaded to build a fix: clean files start fast."""
    import subprocess
    import sys

    clean = tmp_path / "clean.py"
    clean.write_text("import torch\n\nmodel = torch.nn.Linear(4, 4)\n")
    fixable = tmp_path / "fixable.py"
    fixable.write_text(
        "import torch\n\ndef train(model, loader, opt):\n    for x, y in loader:\n"
        "        loss = model(x.to('cuda'))\n        loss.backward()\n        opt.step()\n"
    )
    probe = (
        "import sys\nfrom torchtriage.cli import main\ncode = main(sys.argv[1:])\n"
        "print('libcst' in sys.modules, code)"
    )
    for path, imported in ((clean, "False 0"), (fixable, "True 1")):
        done = subprocess.run([sys.executable, "-c", probe, "check", str(path)], capture_output=True, text=True)
        assert done.stdout.strip().splitlines()[-1] == imported, done.stdout + done.stderr
