"""DDP hints from what the agent sees at runtime: gradient accumulation without no_sync(),
find_unused_parameters with nothing unused, parameters that do go unused (static_graph)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dist_support import dist_cli, report

pytestmark = pytest.mark.slow


def _ddp(run: Path) -> tuple[dict, list[str]]:
    ranks = report(run)["ranks"]
    [model] = ranks["ddp"]
    return model, [h["kind"] for h in ranks["hints"]]


def test_accumulation_without_no_sync_and_unused_parameters(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = dist_cli(run, "--accumulate", "2", "--find-unused", "--spare")
    assert proc.returncode == 0, proc.stderr
    model, kinds = _ddp(run)
    assert model["backend"] == "gloo" and model["module"] == "Net" and model["buckets"] == 1
    assert model["bucket_cap_mb"] == 25.0 and model["bucket_bytes"] == [model["gradient_bytes"]]
    assert model["forwards_per_step"] == 2 and model["no_sync_forwards_per_step"] == 0
    assert model["find_unused_parameters"] and model["unused_parameter_bytes"] == 4 * 4 * 4 + 4 * 4  # the spare Linear(4, 4)
    assert model["allreduces_per_step"] >= 2  # every micro-batch reduces
    assert kinds == ["no_sync", "static_graph"]
    assert "DDP: 2 forwards (micro-batches) per optimizer step, none under no_sync()" in proc.stdout


def test_no_sync_used_and_find_unused_parameters_with_nothing_unused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = dist_cli(run, "--accumulate", "2", "--no-sync", "--find-unused")
    assert proc.returncode == 0, proc.stderr
    model, kinds = _ddp(run)
    assert model["forwards_per_step"] == 2 and model["no_sync_forwards_per_step"] == 1
    assert model["find_unused_parameters"] and model["unused_parameter_bytes"] == 0
    assert kinds == ["find_unused_parameters"]  # no_sync() is in use: no accumulation hint
