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


def test_a_fix_that_moves_the_loss_is_warned_about_and_the_document_validates(tmp_path) -> None:
    import sys

    import jsonschema

    from torchtriage.findings import Edit, Span
    from torchtriage.runtime.profiling.repeats import Series
    from torchtriage.runtime.profiling.runner import RunOptions
    from torchtriage.runtime.verify import load_schema, verify_document
    from torchtriage.runtime.verify.candidates import Candidate
    from torchtriage.runtime.verify.measure import Measured, Trial, Verification

    script = tmp_path / "train.py"
    original = "import torch\nx = torch.ones(2)\n"

    def trial(name, candidate):
        options = RunOptions(script=script, args=[], out_dir=tmp_path / name, python=sys.executable, run_name=name)
        return Trial(name, candidate, script, Series(options, 1))

    edit = Edit(Span(2, 5, 2, 17), "torch.ones(2, dtype=torch.bfloat16)")
    candidate = Candidate("TT504", 2, "Run the step in bf16", "static", "unsafe", (edit,),
                          "import torch\nx = torch.ones(2, dtype=torch.bfloat16)\n")
    step = {"before_ms": 10.0, "after_ms": 6.0, "delta_ms": -4.0, "delta_pct": -40.0, "speedup": 1.667, "change": "faster",
            "interval": {"method": "block bootstrap", "confidence": 0.95, "low_ms": -4.5, "high_ms": -3.5,
                         "steps": {"before": 10, "after": 10}, "runs": {"before": 1, "after": 1}, "block_steps": {"before": 1, "after": 1}},
            "threshold_ms": 0.5}
    measured = Measured(trial("fix-1-TT504", candidate), step_time=step, verdict="faster",
                        losses=compare_losses([1.0, 0.9, 0.8], [1.0, 0.95, 0.85]))
    result = Verification(script, original, tmp_path, 1, 0, trial("baseline", None), fixes=[measured], kept_text=candidate.text)
    document = verify_document(result, applied=False)
    jsonschema.validate(document, load_schema())
    assert document["fixes"][0]["losses"]["changed"] and document["fixes"][0]["losses"]["first_changed"] == 1
    assert any(w.startswith("TT504 (line 2) changes the loss trajectory beyond float noise: from backward pass 2 on")
               for w in document["warnings"])
    assert any("one run per version" in w for w in document["warnings"])
    assert document["kept"] == [{"code": "TT504", "line": 2}]
    assert "+x = torch.ones(2, dtype=torch.bfloat16)" in document["diff"]
