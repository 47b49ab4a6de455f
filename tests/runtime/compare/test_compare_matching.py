"""Lines matched across edits: by content and position, not by line number."""

from __future__ import annotations

from pathlib import Path

from compare_support import line_of, loader_script, write_run

from torchtriage.runtime.compare import load_run
from torchtriage.runtime.compare.matching import (
    ADDED,
    CHANGED,
    MOVED,
    REMOVED,
    SAME,
    diff_texts,
    finding_fates,
    match_hot_lines,
)

BEFORE = "a = 1\nfor x in data:\n    y = f(x)\n    z = g(y)\nprint(z)\n"


def test_lines_below_an_insertion_move_and_keep_their_identity() -> None:
    after = "import os\n# setup\n" + BEFORE
    m = diff_texts(BEFORE, after)
    assert m.to_b[1] == (3, MOVED) and m.to_b[3] == (5, MOVED) and m.to_b[5] == (7, MOVED)
    assert m.to_a[5] == (3, MOVED)


def test_an_edited_line_is_changed_and_a_deleted_one_is_gone() -> None:
    after = "a = 2\nfor x in data:\n    z = g(f(x))\nprint(z)\n"
    m = diff_texts(BEFORE, after)
    assert m.to_b[1] == (1, CHANGED) and m.to_b[2] == (2, SAME)
    assert m.to_b[5] == (4, MOVED)
    assert 3 not in m.to_b or 4 not in m.to_b  # two lines became one: one of them has no counterpart
    assert m.expected_b(4) in (3, 4)


def test_reindented_code_still_matches() -> None:
    after = "def main():\n" + "".join("    " + line + "\n" for line in BEFORE.splitlines())
    m = diff_texts(BEFORE, after)
    assert all(m.to_b[i] == (i + 1, MOVED) for i in range(1, 6))


def test_a_line_moved_elsewhere_unchanged_is_found() -> None:
    before = "setup()\nconfigure_the_loader(workers=0)\nfor x in data:\n    step(x)\n"
    after = "setup()\nfor x in data:\n    step(x)\nconfigure_the_loader(workers=0)\n"
    m = diff_texts(before, after)
    assert m.to_b[2] == (4, MOVED)


def _two_runs(tmp_path: Path, inserted: str) -> tuple[dict, dict]:
    script = tmp_path / "train.py"
    a_text, b_text = loader_script(0), loader_script(2, inserted)
    lines_a = {"time.sleep": ("data_loading", 40.0), "cross_entropy": ("compute", 8.0), "for x, y in loader": ("data_loading", 1.0)}
    lines_b = {"time.sleep": ("data_loading", 2.0), "cross_entropy": ("compute", 8.5), "print(": ("python_overhead", 0.5)}
    a = write_run(tmp_path / "a", script, a_text, [50.0, 51.0, 49.0], {"data_loading": 0.8, "compute": 0.2}, lines_a)
    b = write_run(tmp_path / "b", script, b_text, [12.0, 11.0, 12.5], {"data_loading": 0.15, "compute": 0.85}, lines_b)
    return a, b


def test_hot_lines_are_matched_across_an_insertion_above_the_loop(tmp_path: Path) -> None:
    inserted = "print('training')\nprint('go')\n"
    a, b = _two_runs(tmp_path, inserted)
    matches = match_hot_lines(a, b)
    by_source = {(m.before or m.after).source: m for m in matches}
    loss = by_source["loss = torch.nn.functional.cross_entropy(model(x), y)"]
    assert loss.match == MOVED and loss.after.line == loss.before.line + 2
    assert loss.before.hot is not None and loss.after.hot is not None
    sleep = by_source["time.sleep(0.006)"]  # above the insertion: same place
    assert sleep.match == SAME and sleep.after.hot["self_ms_per_step"] < sleep.before.hot["self_ms_per_step"]
    loop = by_source["for x, y in loader:"]  # hot before only: still there after, not hot
    assert loop.match == MOVED and loop.after is not None and loop.after.hot is None
    new = by_source["print('training')"]
    assert new.match == ADDED and new.before is None


def test_the_loader_finding_is_fixed_on_its_changed_line(tmp_path: Path) -> None:
    a, b = _two_runs(tmp_path, "print('training')\n")
    fates = {f.code: f for f in finding_fates(a, b)}
    tt302 = fates["TT302"]
    assert tt302.status == "fixed" and tt302.line_status == CHANGED and tt302.category == "data_loading"
    assert tt302.before["line"] == line_of(loader_script(0), "DataLoader(")


def test_without_the_texts_hot_lines_match_by_their_own_text(tmp_path: Path) -> None:
    a, b = _two_runs(tmp_path, "print('training')\n")
    for report in (a, b):
        report.pop("sources")  # as a 1.1 report
    matches = match_hot_lines(a, b)
    loss = next(m for m in matches if m.before and "cross_entropy" in m.before.source)
    assert loss.match == "content" and loss.after.line == loss.before.line + 1


def test_a_deleted_hot_line_is_removed(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    a_text = loader_script(0)
    b_text = a_text.replace("    opt.zero_grad()\n", "")
    a = write_run(tmp_path / "a", script, a_text, [10.0, 10.0], {"compute": 1.0}, {"zero_grad": ("optimizer", 1.0)})
    b = write_run(tmp_path / "b", script, b_text, [10.0, 10.0], {"compute": 1.0}, {"cross_entropy": ("compute", 5.0)})
    [gone] = [m for m in match_hot_lines(a, b) if m.before and "zero_grad" in m.before.source]
    assert gone.match == REMOVED and gone.after is None
    assert load_run(tmp_path / "b").report["sources"][0]["text"] == b_text
