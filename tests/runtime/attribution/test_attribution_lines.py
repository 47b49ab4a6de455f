"""Attribution on real CPU runs: exact lines for ops, slots, backward, syncs, loaders."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_support import line_of, load_profile, profile_cli, top_line

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def basic(tmp_path_factory: pytest.TempPathFactory):
    proc, run = profile_cli(tmp_path_factory.mktemp("basic"), "train_basic.py")
    assert proc.returncode == 0, proc.stderr
    return load_profile(run)


def _self(profile, script: str, line: int, category: str = "compute") -> float:
    return sum(c.self_us for c in profile.lines if c.path.endswith(script) and c.line == line and c.category == category)


def test_operator_slot_matmul_is_charged_to_its_own_line(basic) -> None:
    matmul = line_of("train_basic.py", "c = a @ b")
    caller = line_of("train_basic.py", "z = helper(y, w)")
    names = {n for c in basic.lines if c.line == matmul and c.path.endswith("train_basic.py") for n in c.top_names}
    assert "aten::mm" in names or "aten::matmul" in names
    assert _self(basic, "train_basic.py", matmul) > 0
    assert _self(basic, "train_basic.py", caller) == 0  # not the line that calls the helper
    inclusive = max(c.inclusive_us for c in basic.lines if c.line == caller and c.category == "compute")
    assert inclusive >= _self(basic, "train_basic.py", matmul)


def test_backward_is_charged_to_forward_lines(basic) -> None:
    forward = line_of("train_basic.py", "y = model(x)")
    backward_call = line_of("train_basic.py", "loss.backward()")
    matmul = line_of("train_basic.py", "c = a @ b")
    names_at = lambda line: {n for c in basic.lines if c.line == line and c.path.endswith("train_basic.py") for n in c.top_names}
    assert "AddmmBackward0" in names_at(forward) or "aten::mm" in names_at(forward)
    assert "MmBackward0" in names_at(matmul)
    assert _self(basic, "train_basic.py", backward_call) < _self(basic, "train_basic.py", forward)


def test_item_is_a_sync_point_on_its_line(basic) -> None:
    item = line_of("train_basic.py", "value = loss.item()")
    points = [p for p in basic.sync_points if p.line == item and p.kind == "item"]
    assert points and points[0].count == len(basic.steps) == 3
    assert basic.category_us["host_sync"] > 0


def test_memory_and_steps_are_recorded(basic) -> None:
    assert basic.step_detection == "optimizer"
    assert [s.index for s in basic.steps] == sorted(s.index for s in basic.steps)
    assert len(basic.memory_steps) == 3 and all(m.peak_bytes > 0 for m in basic.memory_steps)
    assert any(m.allocated_bytes > 0 for m in basic.memory_lines if m.line == line_of("train_basic.py", "c = a @ b"))
    assert basic.ops_per_step > 5


def test_sleeping_dataset_line_is_the_top_data_loading_line(tmp_path: Path) -> None:
    proc, run = profile_cli(tmp_path, "sleepy_loader.py")
    assert proc.returncode == 0, proc.stderr
    profile = load_profile(run)
    assert top_line(profile, "data_loading", "sleepy_loader.py") == line_of("sleepy_loader.py", "time.sleep(0.004)")
    loop = line_of("sleepy_loader.py", "for x, y in loader:")
    assert top_line(profile, "data_loading", "sleepy_loader.py", key="inclusive_us") == loop
    sleep = sum(c.self_us for c in profile.lines if c.line == line_of("sleepy_loader.py", "time.sleep(0.004)"))
    assert sleep > 0.5 * profile.category_us["data_loading"]


def test_loader_workers_are_sampled_and_the_sleep_line_carries_the_wait(tmp_path: Path) -> None:
    """num_workers=2 (forked workers): the Dataset runs in the workers, which are sampled; the
    main thread's wait is handed to the line they were sampled on, the loop line keeps it inclusive."""
    proc, run = profile_cli(tmp_path, "sleepy_loader.py", "2")
    assert proc.returncode == 0, proc.stderr
    profile = load_profile(run)
    assert profile.loader_workers == 2 and profile.extra["worker_samples"] > 0
    sleep = line_of("sleepy_loader.py", "time.sleep(0.004)")
    assert top_line(profile, "data_loading", "sleepy_loader.py") == sleep
    [worker_line] = [c for c in profile.lines if c.line == sleep and c.category == "data_loading"]
    assert "DataLoader workers" in worker_line.detail
    loop = line_of("sleepy_loader.py", "for x, y in loader:")
    [wait] = [c for c in profile.lines if c.line == loop and c.category == "data_loading"]
    assert wait.inclusive_us >= 0.9 * profile.category_us["data_loading"] and "sampled" in wait.detail


def test_spawned_loader_workers_say_only_the_wait_is_visible(tmp_path: Path) -> None:
    """Workers started with spawn are not sampled (their target would have to import by name)."""
    proc, run = profile_cli(tmp_path, "sleepy_loader.py", "2", "spawn", timeout=240)
    assert proc.returncode == 0, proc.stderr
    profile = load_profile(run)
    assert profile.loader_workers == 2 and not profile.extra.get("worker_samples")
    loop = line_of("sleepy_loader.py", "for x, y in loader:")
    waits = [c for c in profile.lines if c.line == loop and c.category == "data_loading"]
    assert waits and "only the wait" in waits[0].detail


@pytest.mark.parametrize(
    "script",
    [
        "two_optimizers.py",  # two optimizers step every iteration: one step, not two
        "grad_scaler_skips.py",  # scaler.step(opt) skips opt.step() on overflow: still one step
    ],
)
def test_one_step_per_iteration(tmp_path: Path, script: str) -> None:
    proc, run = profile_cli(tmp_path, script)
    assert proc.returncode == 0, proc.stderr
    profile = load_profile(run)
    marker = [p for p in profile.sync_points if p.line == line_of(script, "marker = loss.item()")]
    assert profile.step_detection == "optimizer" and len(profile.steps) == 3
    assert marker and marker[0].count == 3  # the marker runs once per iteration


def test_inference_script_steps_on_the_outermost_forward(tmp_path: Path) -> None:
    proc, run = profile_cli(tmp_path, "inference.py")
    assert proc.returncode == 0, proc.stderr
    profile = load_profile(run)
    assert profile.step_detection == "forward" and len(profile.steps) == 3
    forward = line_of("inference.py", "logits = model(batch)")
    assert top_line(profile, "compute", "inference.py", key="inclusive_us") == forward
