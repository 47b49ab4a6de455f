"""Incremental re-parsing gives exactly what a full parse and analysis give.

Random edits (typing, deleting, breaking and mending syntax, indenting, adding
decorators and semicolons) are applied to real files; after each one the
incrementally re-parsed module is compared node for node, position for
position, with a fresh full parse, and the findings with a fresh analysis.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from torchtriage.analysis import analyze_source
from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.incremental.reparse import ParsedModule, parse_module
from torchtriage.findings import Finding

from incremental_support import _same

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
from lsp_bench import training_file  # noqa: E402  (the benchmark's 1,000-line training file)

TRICKY = '''\
# a leading comment

import torch; import torch.nn as nn
from torch.utils.data import DataLoader


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    for x, y in loader:
        print(model(x).sum().item())


class Net(nn.Module):
    def forward(self, x):
        return x * 2
x = 1; y = (2,
   3)
text = """a string
def not_code():
    pass
"""
if __name__ == "__main__":
    loader = DataLoader(range(10))
    model, opt = Net(), torch.optim.SGD([], lr=0.1)
    for step, batch in enumerate(loader):
        loss = model(batch).sum()
        loss.backward(); opt.step()
        total = loss.item()
# trailing comment'''

LINES = [
    "",
    "# a comment",
    "x = 1",
    "    y = 2",
    "        loss.backward()",
    "    total += loss.item()",
    "def f():",
    "    return 1",
    "@decorator",
    "class C:",
    "    pass",
    "if True:",
    "else:",
    "a = (",
    ")",
    '"""',
    "value = 3 \\",
    "    + 4",
    "for i in range(3): print(i)",
    "async def g():",
    "    await h()",
    "print(loss.item()); z = 1",
]
FRAGMENTS = ["(", ")", "[", "]", ":", '"', "'", "\\", "#", " ", "    ", "\t", "x", ".item()", "\n", ";", "=", "@"]


def _corpus() -> list[tuple[str, str]]:
    files = [("tricky.py", TRICKY), ("bench.py", training_file(300))]
    for path in sorted((ROOT / "examples").glob("*.py")):
        files.append((path.name, path.read_text()))
    return files


def _edit(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    kind = rng.randrange(6)
    at = rng.randrange(len(lines) + 1)
    if kind == 0:  # a new line
        lines.insert(at, rng.choice(LINES))
    elif kind == 1 and lines:  # delete a few lines
        del lines[min(at, len(lines) - 1) : at + rng.randrange(1, 4)]
    elif kind == 2 and lines:  # replace a line
        lines[min(at, len(lines) - 1)] = rng.choice(LINES)
    elif kind == 3:  # type characters somewhere
        offset = rng.randrange(len(text) + 1)
        return text[:offset] + rng.choice(FRAGMENTS) + text[offset:]
    elif kind == 4 and text:  # delete characters somewhere
        offset = rng.randrange(len(text))
        return text[:offset] + text[offset + rng.randrange(1, 6) :]
    else:  # indent or dedent a line
        index = min(at, len(lines) - 1)
        line = lines[index]
        lines[index] = line[4:] if line.startswith("    ") and rng.random() < 0.5 else "    " + line
    return "\n".join(lines)



@pytest.mark.parametrize("name,text", _corpus(), ids=[name for name, _ in _corpus()])
def test_random_edits_reparse_like_a_full_parse(name: str, text: str) -> None:
    rng = random.Random(name)
    analyzer = IncrementalAnalyzer(name)
    _same(analyzer.parse(text), parse_module(text, name))
    partial = parsed = 0
    last_good = text
    for _ in range(400):
        # Typing breaks the syntax now and then and mends it soon after.
        text = _edit(text, rng) if rng.random() < 0.7 else last_good
        result = analyzer.parse(text)
        _same(result, parse_module(text, name))
        if isinstance(result, ParsedModule):
            last_good = text
            parsed += 1
            partial += result.reparsed_lines < len(result.lines)
    assert partial > parsed / 2, "most edits should re-parse only part of the file"


@pytest.mark.parametrize("name,text", _corpus()[:4], ids=[name for name, _ in _corpus()[:4]])
def test_random_edits_find_what_a_full_analysis_finds(name: str, text: str) -> None:
    rng = random.Random(f"findings-{name}")
    analyzer = IncrementalAnalyzer(name)
    last_good = text
    for _ in range(60):
        text = _edit(text, rng) if rng.random() < 0.7 else last_good
        if not isinstance(parse_module(text, name), Finding):
            last_good = text
        assert analyzer.analyze(text) == analyze_source(text, name)


def test_an_edit_inside_one_function_reparses_only_that_function() -> None:
    text = training_file(1000)
    analyzer = IncrementalAnalyzer("train.py")
    first = analyzer.parse(text)
    assert isinstance(first, ParsedModule) and first.reparsed_lines == len(first.lines)
    edited = text.replace("            total += loss.item()\n", "            total += loss.item() * 2\n")
    second = analyzer.parse(edited)
    assert isinstance(second, ParsedModule)
    assert second.reparsed_lines <= 20  # the train() function, not the 1,000 lines
    assert analyzer.analyze(edited) == analyze_source(edited, "train.py")


def test_a_syntax_error_keeps_the_last_good_version_as_the_base() -> None:
    analyzer = IncrementalAnalyzer("t.py")
    good = "import torch\n\ndef f(x):\n    return x.item()\n"
    assert isinstance(analyzer.parse(good), ParsedModule)
    broken = analyzer.parse(good.replace("return x.item()", "return x.item("))
    assert isinstance(broken, Finding) and broken.code == "TT000"
    mended = good.replace("return x.item()", "return x.item() + 1")
    _same(analyzer.parse(mended), parse_module(mended, "t.py"))


def test_a_line_shift_moves_findings_after_the_edit() -> None:
    text = "import torch\n\n\ndef step(loader, model, opt):\n    for x in loader:\n        loss = model(x)\n        loss.backward()\n        opt.step()\n        print(loss.item())\n"
    analyzer = IncrementalAnalyzer("t.py")
    before = analyzer.analyze(text)
    after = analyzer.analyze("# one more line\n" + text)
    assert [f.span.line + 1 for f in before] == [f.span.line for f in after] and before


def long_main_file(statements: int = 300) -> str:
    """An invented script shaped like timm's train.py: one very long ``main()`` (argument
    set-up, model and loader construction, an epoch loop with a step loop) plus helpers."""
    setup = "\n".join(
        f"    parser.add_argument('--opt{i}', default={i}, type=int)\n    value{i} = args.opt{i} * {i} if {i} % 3 else None"
        for i in range(statements // 2)
    )
    return f'''import argparse
import time
import torch
from torch.utils.data import DataLoader


def helper(x):
    return x * 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", default=4, type=int)
    args = parser.parse_args()
{setup}
    device = torch.device("cuda")
    model = torch.nn.Linear(8, 2).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(dataset, batch_size=32, num_workers=args.workers)
    for epoch in range(10):
        start = time.time()
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if not torch.isfinite(loss):
                raise RuntimeError("diverged")
            total = loss.item()
            print("loss", loss.item())
        print(epoch, time.time() - start)


if __name__ == "__main__":
    main()
'''


def test_random_edits_inside_a_long_function_find_what_a_full_analysis_finds() -> None:
    text = long_main_file()
    assert text.count("\n") > 300
    rng = random.Random("long-main")
    analyzer = IncrementalAnalyzer("long_main.py")
    assert analyzer.analyze(text) == analyze_source(text, "long_main.py")
    last_good = text
    for _ in range(40):
        if rng.random() < 0.7:
            # edits land inside main(), as when typing in a long training function
            lines = text.split("\n")
            first, last = text.find("def main():"), text.find("if __name__")
            start = text[:first].count("\n") + 1 if first >= 0 else 0
            end = text[:last].count("\n") - 1 if last >= 0 else len(lines)
            at = rng.randrange(start, max(start + 1, min(end, len(lines))))
            choice = rng.choice(["    total += loss.item()", "    x = 1", "    # note", "    y = (", ""])
            if rng.random() < 0.5:
                lines.insert(at, choice)
            else:
                lines[at] = choice
            text = "\n".join(lines)
        else:
            text = last_good
        if not isinstance(parse_module(text, "long_main.py"), Finding):
            last_good = text
        assert analyzer.analyze(text) == analyze_source(text, "long_main.py")
