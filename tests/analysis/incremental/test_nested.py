"""Edits inside a long function re-parse only the statements they touched, exactly.

An ~800-line ``main()`` (nested loops, ``if``/``elif``/``else``, ``try``/``except``/
``finally``, ``with``, ``match``, nested functions with decorators, multi-line calls and
strings, semicolons, backslash continuations, tabs nowhere) takes random edits at every
depth: new lines at any indentation, deleted and replaced lines, typed fragments that
break the syntax and mend it, new ``else:``/``except`` clauses, decorators.  After each,
the incrementally re-parsed module must equal a fresh full parse node for node, position
for position, in walk order and parents; and the analysis must equal a fresh analysis,
including after edits that change which code is per-step or which device the file uses.
"""

from __future__ import annotations

import random

import pytest

from torchtriage.analysis import analyze_source
from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.incremental.reparse import ParsedModule, parse_module
from torchtriage.findings import Finding

from incremental_support import _same, long_function_file


# Lines to put in at the indentation of the line they go next to, or one level deeper/shallower.
STATEMENTS = [
    "x = 1", "total += loss.item()", "# a comment", "", "pass", "else:", "elif x:", "except KeyError:",
    "finally:", "if x:", "for i in range(3):", "while False:", "with a as b:", "try:", "return 3",
    "@decorator", "def inner():", "class Local:", "y = (", ")", '"""', "value = 3 \\", "    + 4",
    "case 1:", "print(x); z = 2", "optimizer.step()", "model = model.cuda()", "loss.backward()",
    "for batch in loader:", "    out = model(batch)", "break", "yield x", "await thing",
]
FRAGMENTS = ["(", ")", "[", "]", ":", '"', "'", "\\", "#", " ", "    ", "x", ".item()", "\n", ";", "=", "@", "\t"]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def edit_inside(text: str, rng: random.Random, first_line: int, last_line: int) -> str:
    """One random edit between two lines (0-based) of ``text``."""
    lines = text.split("\n")
    last_line = min(last_line, len(lines) - 1)
    at = rng.randrange(first_line, max(first_line + 1, last_line))
    near = _indent(lines[at]) if at < len(lines) else ""
    indent = rng.choice([near, near, near + "    ", near[4:], near + "  "])
    kind = rng.randrange(6)
    if kind == 0:
        lines.insert(at, indent + rng.choice(STATEMENTS))
    elif kind == 1:
        del lines[at : at + rng.randrange(1, 4)]
    elif kind == 2:
        lines[at] = indent + rng.choice(STATEMENTS)
    elif kind == 3:  # type into a line
        line = lines[at]
        column = rng.randrange(len(line) + 1)
        lines[at] = line[:column] + rng.choice(FRAGMENTS) + line[column:]
    elif kind == 4 and at < len(lines):  # delete characters in a line
        line = lines[at]
        column = rng.randrange(len(line) + 1)
        lines[at] = line[:column] + line[column + rng.randrange(1, 5) :]
    else:  # indent or dedent a block of lines
        count = rng.randrange(1, 4)
        for index in range(at, min(at + count, len(lines))):
            line = lines[index]
            lines[index] = line[4:] if line.startswith("    ") and rng.random() < 0.5 else "    " + line
    return "\n".join(lines)


def _main_lines(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("def main")), 0)
    end = next((i for i, line in enumerate(lines) if line.startswith("if __name__")), len(lines))
    return start + 1, max(start + 2, end - 2)


@pytest.mark.parametrize("seed", range(3))
def test_random_edits_inside_a_long_function_reparse_like_a_full_parse(seed: int) -> None:
    text = long_function_file()
    assert 780 <= text.count("\n") <= 900
    rng = random.Random(f"nested-{seed}")
    analyzer = IncrementalAnalyzer("main.py")
    _same(analyzer.parse(text), parse_module(text, "main.py"))
    nested = parsed = 0
    last_good = text
    for _ in range(250):
        text = edit_inside(text, rng, *_main_lines(text)) if rng.random() < 0.75 else last_good
        result = analyzer.parse(text)
        _same(result, parse_module(text, "main.py"))
        if isinstance(result, ParsedModule):
            last_good = text
            parsed += 1
            nested += result.reparsed_lines < 60
    assert nested > parsed / 2, f"most edits should re-parse a few statements ({nested} of {parsed})"


def test_a_one_line_edit_in_a_long_function_reparses_a_few_lines() -> None:
    text = long_function_file()
    analyzer = IncrementalAnalyzer("main.py")
    analyzer.parse(text)
    for old, new in [
        ('        notes = handle.read()\n', '        notes = handle.read().strip()\n'),  # inside a with block
        ('            speed = 7\n', '            speed = 70\n'),  # inside a match case
        ('        table7 = None\n', '        table7 = None\n        retry = True\n'),  # a new line in an except
        ('            total = loss.item()\n', '            total = loss.item()  # noqa\n'),  # in the step loop
    ]:
        assert old in text
        text = text.replace(old, new, 1)
        result = analyzer.parse(text)
        assert isinstance(result, ParsedModule)
        assert result.reparsed_lines <= 12, (old, result.reparsed_lines)
        _same(result, parse_module(text, "main.py"))


# Edits that change what the rules see beyond the edited line: per-step code, the device,
# names bound earlier in the function, a new loop, an optimizer step that makes a loop a step loop.
CONTEXT_EDITS = [
    ("    device = torch.device(\"cpu\")\n", "    device = torch.device(\"cuda\")\n"),
    ("    model = torch.nn.Linear(8, 2).to(device)\n", "    model = torch.nn.Linear(8, 2).cuda()\n"),
    ("            loss.backward()\n", ""),
    ("                optimizer.step()\n", ""),
    ("            total = loss.item()\n", "            total = loss.item()\n            for sample in out:\n                print(sample.item())\n"),
    ("        notes = handle.read()\n", "        notes = handle.read()\n        for row in loader:\n            optimizer.step()\n            print(row.sum().item())\n"),
    ("    count = 0\n", "    count = torch.zeros(1).cuda()\n"),
    ("            out = model(x)\n", "            out = model(x)\n            torch.cuda.synchronize()\n"),
    ("    for epoch in range(args.epochs):\n", "    for epoch in range(args.epochs):\n        pass\n    for epoch in loader:\n"),
]


def test_edits_that_change_hotness_and_device_find_what_a_full_analysis_finds() -> None:
    text = long_function_file(12)
    analyzer = IncrementalAnalyzer("main.py")
    assert analyzer.analyze(text) == analyze_source(text, "main.py")
    changed = 0
    for old, new in CONTEXT_EDITS + [(new, old) for old, new in reversed(CONTEXT_EDITS)]:
        if old not in text:
            continue
        before = analyze_source(text, "main.py")
        text = text.replace(old, new, 1)
        after = analyzer.analyze(text)
        assert after == analyze_source(text, "main.py"), (old, new)
        changed += after != before
    assert changed >= 6, "the edits should change the findings"


def test_random_edits_inside_a_long_function_find_what_a_full_analysis_finds() -> None:
    text = long_function_file(10)
    rng = random.Random("nested-findings")
    analyzer = IncrementalAnalyzer("main.py")
    last_good = text
    edits = [line for pair in CONTEXT_EDITS for line in pair if line]
    for _ in range(60):
        roll = rng.random()
        if roll < 0.5:
            text = edit_inside(text, rng, *_main_lines(text))
        elif roll < 0.8:
            lines = text.split("\n")
            start, end = _main_lines(text)
            at = rng.randrange(start, end)
            snippet = rng.choice(edits).rstrip("\n").split("\n")
            lines[at:at] = snippet if rng.random() < 0.5 else [_indent(lines[at]) + s.strip() for s in snippet]
            text = "\n".join(lines)
        else:
            text = last_good
        if not isinstance(parse_module(text, "main.py"), Finding):
            last_good = text
        assert analyzer.analyze(text) == analyze_source(text, "main.py")


def test_deferred_fixes_are_built_exactly_as_the_eager_ones() -> None:
    """The language server publishes before building fixes while libcst is not loaded yet;
    the fixes it adds afterwards are exactly those of a normal analysis."""
    text = long_function_file(4).replace("    device = torch.device(\"cpu\")\n", "    device = torch.device(\"cuda\")\n")
    analyzer = IncrementalAnalyzer("main.py")
    for edited in (text, text.replace("            total = loss.item()\n", "            total = loss.item() + 1\n")):
        deferred = analyzer.analyze(edited, defer_fixes=True)
        assert all(f.fix is None for f in deferred)
        offered = [analyzer.has_fix(f) for f in deferred]
        built = analyzer.build_fixes(deferred)
        assert built == analyze_source(edited, "main.py")
        assert any(f.fix is not None for f in built), "the file should have a fixable finding"
        assert all(has or f.fix is None for has, f in zip(offered, built))  # no fix without a builder
