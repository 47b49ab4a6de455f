"""Helpers for the hot-loop tests: analyse a source and check its ``# H`` / ``# C`` marks.

Each test source marks its lines: ``# H`` = the statement starting on this line is
per-step, ``# C`` = it is not (set-up, per-epoch, under a rare guard).
Unmarked lines are not checked.
"""

from __future__ import annotations

import ast
import textwrap

from torchtriage.analysis.context import ModuleContext
from torchtriage.analysis.hotloops.finder import HotLoops, find_hot_loops


def analyse(source: str) -> tuple[str, HotLoops]:
    code = textwrap.dedent(source).lstrip("\n")
    return code, find_hot_loops(ModuleContext(code, ast.parse(code)))


def per_step_lines(hot: HotLoops) -> set[int]:
    return {node.lineno for node in hot.per_step if isinstance(node, ast.stmt)}


def check_marks(source: str) -> HotLoops:
    code, hot = analyse(source)
    hot_lines = per_step_lines(hot)
    marked = 0
    for number, line in enumerate(code.splitlines(), 1):
        text = line.rstrip()
        if text.endswith("# H"):
            assert number in hot_lines, f"line {number} should be per-step: {line.strip()}"
            marked += 1
        elif text.endswith("# C"):
            assert number not in hot_lines, f"line {number} should not be per-step: {line.strip()}"
            marked += 1
    assert marked, "a case must mark lines"
    return hot


def region_at(hot: HotLoops, line: int):
    matches = [r for r in hot.regions if r.node.lineno == line]
    assert matches, f"no region starts on line {line}: {[r.node.lineno for r in hot.regions]}"
    return matches[0]
