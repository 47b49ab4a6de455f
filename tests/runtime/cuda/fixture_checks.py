"""What a GPU profile of each runtime-findings fixture (``tests/data/runtime/gpu/``) must show.

Each check takes the report, the ``ProfileData`` it was built from and the fixture's script, so the same
assertions hold a run recorded on a GPU (``tests/data/runtime/cuda/<fixture>/``, read in CI) and a fresh one
(``-m cuda`` on a GPU machine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from cuda_cases import line_of
from torchtriage.runtime.results.profile_data import ProfileData

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "runtime" / "gpu"
Report = dict[str, Any]


def runtime(report: Report, code: str) -> list[dict[str, Any]]:
    return [f for f in report.get("runtime_findings", []) if f["code"] == code]


def one_step_per_iteration(profile: ProfileData, script: Path) -> None:
    """Steps are loop iterations (a marker ``.item()`` once per step), not optimizer calls."""
    marker = [p for p in profile.sync_points if p.line == line_of(script, "marker = loss.item()")]
    assert profile.step_detection == "optimizer" and len(profile.steps) >= 3
    assert marker and marker[0].count == len(profile.steps)


def check_adam_memory(report: Report, profile: ProfileData, script: Path) -> None:
    shape = report["memory_shape"]
    params = 2 * (2048 * 2048 + 2048) * 4  # two Linear(2048, 2048) in fp32
    c = shape["components"]
    assert c["parameters"] == params and c["gradients"] == params
    assert 2 * params <= c["optimizer_state"] <= 2 * params + 4096  # exp_avg, exp_avg_sq (+ the step counters)
    assert shape["dominant"] == "optimizer_state"
    [finding] = runtime(report, "TTR701")
    assert finding["line"] == line_of(script, "opt.step()")


def check_attention(report: Report, profile: ProfileData, script: Path) -> None:
    [finding] = runtime(report, "TTR603")
    assert finding["line"] == line_of(script, "scores = q @ k") and finding["share"] > 0


def check_lookalike(report: Report, profile: ProfileData, script: Path) -> None:
    assert not runtime(report, "TTR603")


def check_tensor_core_shapes(report: Report, profile: ProfileData, script: Path) -> None:
    found = runtime(report, "TTR601")
    assert found, [f["code"] for f in report.get("runtime_findings", [])]
    assert found[0]["line"] == line_of(script, "logits = model(x)")
    assert "1023" in found[0]["message"] or "30001" in found[0]["message"]


def check_idle_gap(report: Report, profile: ProfileData, script: Path) -> None:
    pause = line_of(script, "time.sleep(0.004)")
    assert any(g.line == pause for g in profile.gpu_gaps), [(g.path, g.line) for g in profile.gpu_gaps]
    [finding] = runtime(report, "TTR604")
    assert finding["line"] == pause


def check_grad_scaler(report: Report, profile: ProfileData, script: Path) -> None:
    one_step_per_iteration(profile, script)


def check_two_optimizers(report: Report, profile: ProfileData, script: Path) -> None:
    one_step_per_iteration(profile, script)


def check_reduce_overhead(report: Report, profile: ProfileData, script: Path) -> None:
    """CUDA graphs: the compiled forward and backward replay as graph launches, one compiled graph run a step,
    charged to the line that called the compiled model; nothing recompiles."""
    assert sum(1 for op in profile.ops if op.name == "cudaGraphLaunch") >= 1
    [frame] = report["compile"]["frames"]
    assert frame["call_line"] == line_of(script, "loss = compiled(x)") and frame["graph_runs_per_step"] == 1.0
    assert report["compile"]["recompiles"] == 0 and report["compile"]["graph_breaks"] == 0


CHECKS: dict[str, Callable[[Report, ProfileData, Path], None]] = {
    "adam_memory": check_adam_memory,
    "attention_train": check_attention,
    "lookalike_train": check_lookalike,
    "tensor_core_shapes": check_tensor_core_shapes,
    "idle_gap": check_idle_gap,
    "grad_scaler_fp16": check_grad_scaler,
    "two_optimizers": check_two_optimizers,
    "reduce_overhead": check_reduce_overhead,
}
