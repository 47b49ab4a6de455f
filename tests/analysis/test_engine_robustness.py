"""The analyzer never raises on user input: broken, partial, binary-ish, huge, deep, random.

Syntax problems become one TT000 finding at their location; a crashing rule
becomes a TT999 finding while the other rules still run; fixing never turns a
parsing file into a broken one.
"""

from __future__ import annotations

import ast
import gc
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchtriage.analysis import analyze_source, fix_source
from torchtriage.analysis.rules import Report, Rule, all_rules, rule_by_code
from torchtriage.config import Settings
from torchtriage.findings import INTERNAL_ERROR_CODE, SYNTAX_ERROR_CODE, Finding, Span

SNIPPETS = [
    '''
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(dataset, batch_size=64, shuffle=True)
model = Net().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
for epoch in range(10):
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.cuda()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=False)
        loss.backward(retain_graph=True)
        opt.step()
        torch.cuda.empty_cache()
        if loss.isnan():
            print(f"step {step}: {loss.item():.3f}")
        total += loss.item()
''',
    '''
import torch
import pytorch_lightning as pl

class LitModel(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = self.loss_fn(logits, y)
        self.log("acc", (logits.argmax(-1) == y).float().mean().item())
        print(loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
''',
    '''
import torch

def train_step(model, batch, scaler, opt):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(batch["image"].to("cuda"))
        loss = out.mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    torch.cuda.synchronize()
    return loss.detach().cpu().numpy()

model = torch.compile(model)
with torch.autograd.detect_anomaly():
    for batch in train_loader:
        losses.append(train_step(model, batch, scaler, opt))
        handle = model.register_forward_hook(lambda m, i, o: None)
''',
]
ALL = Settings(device="cuda")


def _check(source: str) -> list[Finding]:
    findings = analyze_source(source, "t.py", ALL)
    assert isinstance(findings, list)
    assert not [f for f in findings if f.code == INTERNAL_ERROR_CODE], findings
    for finding in findings:
        assert finding.span.line >= 1 and finding.span.column >= 1
        assert (finding.span.end_line, finding.span.end_column) >= (finding.span.line, finding.span.column)
    return findings


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


# --- bad input -------------------------------------------------------------------------


def test_syntax_error_is_one_tt000_at_its_location() -> None:
    [finding] = analyze_source("import torch\n\nfor x in loader\n    pass\n", "t.py")
    assert finding.code == SYNTAX_ERROR_CODE and finding.name == "syntax-error"
    assert finding.span.line == 3 and finding.message.startswith("SyntaxError: ")
    assert finding.path == "t.py"


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nfor x in loader:\n    x = x.to(",  # typing a call
        "import torch\nfor x in loader:\n",  # a loop without a body yet
        'import torch\ns = """never closed\n',
        "import torch\nx = 1\x00\n",  # null byte
        "\ufeffimport torch\n",  # stray BOM
        "import torch\n\tif x:\n        pass\n",  # inconsistent indentation
        "x = (" * 300 + ")" * 300,  # parser nesting limit
        "x = " + "-" * 30000 + "1\n",  # overflows the parser
        "x = " + "+".join(["a"] * 30000) + "\n",  # RecursionError building the ast
        "\x0c\x0b\r\r\n\u2028",
        "",
    ],
)
def test_bad_input_never_raises(source: str) -> None:
    findings = analyze_source(source, "t.py", ALL)
    if not _parses(source):
        assert [f.code for f in findings] == [SYNTAX_ERROR_CODE]
        assert findings[0].message


@pytest.mark.parametrize("depth", [100, 900])
def test_deep_but_parsable_nesting_is_analysed(depth: int) -> None:
    loop = "import torch\nfor x in loader:\n    y = {}\n    loss = model(y).sum(); loss.backward()\n    t = loss.item()\n"
    for expression in ("+".join(["x"] * depth), "-" * depth + "x", "x" + ".a" * depth, "f(" * 90 + ")" * 90):
        findings = _check(loop.format(expression))
        assert any(f.code == "TT101" for f in findings)


def test_fifty_thousand_lines() -> None:
    functions = "".join(
        f"def layer_{i}(x, w):\n    y = torch.relu(x @ w)\n    if y.sum() > 0:\n        y = y * 2\n    return y + {i}\n\n"
        for i in range(8400)
    )
    source = (
        'import torch\ndevice = "cuda"\n'
        + functions
        + "for x, y in loader:\n    x = x.to(device)\n    loss = model(x).sum(); loss.backward()\n"
    )
    assert source.count("\n") > 50_000
    findings = analyze_source(source, "big.py", Settings(select=("TT301",)))
    assert [(f.code, f.span.line) for f in findings] == [("TT301", source.count("\n") - 1)]


# --- a crashing rule ---------------------------------------------------------------------


def test_a_crashing_rule_is_tt999_and_the_others_still_run() -> None:
    all_rules()  # fill the registry cache before the test rules exist: they must not leak into it
    tt301 = rule_by_code("TT301")
    assert tt301 is not None

    class Crashing(Rule):
        code = "TT998"
        name = "crashing-rule"
        category = "debugging"
        summary = why = fix_description = "test only"

        def check(self, ctx) -> Iterator[Report]:
            yield from ()
            raise KeyError("boom")

    class BrokenFix(Rule):
        code = "TT997"
        name = "broken-fix"
        category = "debugging"
        summary = why = fix_description = "test only"

        def check(self, ctx) -> Iterator[Report]:
            yield Report(ctx.tree.body[0], "flagged", fix=lambda: 1 / 0)

    try:
        source = 'import torch\ndevice = "cuda"\nfor x in loader:\n    x = x.to(device)\n    model(x).sum().backward()\n'
        findings = analyze_source(source, "t.py", rules=[Crashing, BrokenFix, tt301])
        by_code = {f.code: f for f in findings}
        assert set(by_code) == {INTERNAL_ERROR_CODE, "TT997", "TT301"}
        assert "TT998 crashing-rule: KeyError" in by_code[INTERNAL_ERROR_CODE].message
        assert by_code[INTERNAL_ERROR_CODE].span == Span(1, 1, 1, 1)
        assert by_code["TT997"].fix is None  # a fix that cannot be built is not offered
    finally:
        del Crashing, BrokenFix
        gc.collect()
    assert "TT998" not in {rule.code for rule in all_rules()}


# --- properties ---------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_every_truncation_of_a_training_snippet(index: int) -> None:
    snippet = SNIPPETS[index].lstrip("\n")
    for offset in range(0, len(snippet) + 1, 3):
        _check(snippet[:offset])


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_snippet = st.sampled_from(SNIPPETS).map(lambda s: s.lstrip("\n"))
_junk = st.sampled_from(list("()[]{}:,.=+-*/%!?@#'\"\\\n\t ")) | st.characters()


@st.composite
def mutated(draw) -> str:
    """A snippet with a few characters replaced, inserted or deleted, maybe truncated."""
    text = draw(_snippet)
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["replace", "insert", "delete"]))
        char = draw(_junk)
        if kind == "insert":
            text = text[:position] + char + text[position:]
        elif kind == "replace":
            text = text[:position] + char + text[position + 1 :]
        else:
            text = text[:position] + text[position + 1 :]
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


@FAST
@given(mutated())
def test_mutated_snippets_never_raise(source: str) -> None:
    findings = _check(source)
    if not _parses(source):
        assert [f.code for f in findings] == [SYNTAX_ERROR_CODE]


@FAST
@given(st.text(max_size=400))
def test_random_text_never_raises(source: str) -> None:
    _check(source)


@FAST
@given(mutated())
def test_fixing_never_breaks_a_parsing_file(source: str) -> None:
    if not _parses(source):
        return
    result = fix_source(source, "t.py", ALL, unsafe=True)
    assert _parses(result.source), result.source


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_fixing_the_snippets_applies_fixes_and_parses(index: int) -> None:
    source = SNIPPETS[index].lstrip("\n")
    result = fix_source(source, "t.py", ALL, unsafe=True)
    assert result.applied >= 1 and result.source != source
    assert _parses(result.source)
    assert fix_source(result.source, "t.py", ALL, unsafe=True).source == result.source
