"""The parts of ``fix --verify`` that need no run: the loader edit behind the runtime advice, the loss check,
the warning it gives, and the text rendering of a document."""

from __future__ import annotations

from torchtriage.analysis.fixes import apply_edits
from torchtriage.analysis.loader_edits import loader_worker_edits
from torchtriage.runtime.verify.losses import RELATIVE_TOLERANCE, compare_losses

HEAD = "import torch\nfrom torch.utils.data import DataLoader\n"


def _fixed(body: str, workers: int = 2, cuda: bool = False) -> tuple[list[tuple[int, str, tuple]], str]:
    source = HEAD + body
    found = loader_worker_edits(source, "train.py", workers, cuda)
    return found, apply_edits(source, [e for _, _, edits in found for e in edits])


def test_workers_added_where_left_out_and_raised_where_lower() -> None:
    found, text = _fixed("a = DataLoader(ds, batch_size=8)\nb = DataLoader(ds, num_workers=0)\nc = DataLoader(ds, num_workers=1)\n", 2)
    assert [line for line, _, _ in found] == [3, 4, 5]
    assert "a = DataLoader(ds, batch_size=8, num_workers=2, persistent_workers=True)" in text
    assert "b = DataLoader(ds, num_workers=2, persistent_workers=True)" in text
    assert "c = DataLoader(ds, num_workers=2, persistent_workers=True)" in text


def test_workers_the_script_chose_are_left_alone() -> None:
    found, _ = _fixed("n = 4\na = DataLoader(ds, num_workers=n)\nb = DataLoader(ds, **kw)\nc = DataLoader(ds, num_workers=8)\n"
                      "d = DataLoader(ds, 8, False, None, None, 0)\n", 2)
    assert found == []


def test_pinned_memory_only_on_cuda_and_only_when_unset() -> None:
    _, cpu = _fixed("a = DataLoader(ds)\n", 2, cuda=False)
    _, cuda = _fixed("a = DataLoader(ds)\nb = DataLoader(ds, pin_memory=False)\n", 2, cuda=True)
    assert "pin_memory" not in cpu
    assert "a = DataLoader(ds, num_workers=2, persistent_workers=True, pin_memory=True)" in cuda
    assert "b = DataLoader(ds, pin_memory=False, num_workers=2, persistent_workers=True)" in cuda


def test_no_edit_without_a_loader_or_on_broken_code() -> None:
    assert loader_worker_edits("x = 1\n", "a.py", 2, False) == []
    assert loader_worker_edits("DataLoader(\n", "a.py", 2, False) == []
    assert loader_worker_edits(HEAD + "a = DataLoader(ds)\n", "a.py", 0, False) == []


def test_equal_trajectories_are_unchanged_and_float_noise_is_tolerated() -> None:
    same = compare_losses([1.0, 0.5, 0.25], [1.0, 0.5, 0.25])
    assert same.compared == 3 and same.max_relative_diff == 0.0 and not same.changed
    noisy = compare_losses([1.0, 0.5, 0.25], [1.0 + 1e-6, 0.5, 0.25 * (1 + RELATIVE_TOLERANCE / 2)])
    assert not noisy.changed


def test_a_moved_trajectory_is_changed_from_its_first_difference() -> None:
    moved = compare_losses([1.0, 0.5, 0.25, 0.2], [1.0, 0.5, 0.26, 0.2])
    assert moved.changed and moved.first_changed == 2
    assert abs(moved.max_relative_diff - 0.01 / 0.26) < 1e-9
    assert compare_losses([1.0, None], [1.0, 2.0]).changed  # a NaN on one side only


def test_too_few_common_losses_say_nothing() -> None:
    check = compare_losses([1.0], [2.0, 3.0])
    assert check.compared == 1 and check.max_relative_diff is None and not check.changed
    assert compare_losses([], []).to_json()["max_relative_diff"] is None
