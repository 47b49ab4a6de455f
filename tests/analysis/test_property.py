"""Property tests: the analyzer never raises, whatever text it is given.

While typing, a buffer is usually half a statement; the analyzer must answer
with findings (TT000 for a syntax error) and never with a traceback, and
fixing a parsing file must never produce one that does not parse.
"""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchtriage.analysis import analyze_source, fix_source
from torchtriage.analysis.notebooks import analyze_notebook
from torchtriage.config import Settings
from torchtriage.findings import INTERNAL_ERROR_CODE, Finding

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").rglob("*.py"))
SOURCES = [path.read_text(encoding="utf-8") for path in EXAMPLES]
CUDA = Settings(device="cuda")  # CUDA-only rules run too

PYTHON_PIECES = [
    "for ", "while ", "if ", "with torch.no_grad():", "x, y in loader:", "loss = criterion(model(x), y)\n",
    "loss.backward()\n", "optimizer.step()\n", ".item()", ".to(device)", "torch.cuda.synchronize()\n",
    "print(loss)\n", "total += loss\n", "DataLoader(ds, **kw)", "def step(batch):\n", "    ", "\t", "(", ")",
    "[", "]", ":", "\n", "#", "'", '"""', "lambda: ", "yield ", "async ", "await ", "@torch.no_grad()\n",
    "class M(nn.Module):\n", "% 10 == 0", "enumerate(", "**", "=", "\\\n", "\x00", "é", "\r\n",
]


def _assert_clean(findings: list[Finding]) -> None:
    assert isinstance(findings, list)
    assert not [f for f in findings if f.code == INTERNAL_ERROR_CODE], findings
    for finding in findings:
        assert finding.span.line >= 1 and finding.span.column >= 1
        finding.to_json()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(min_value=0, max_value=len(SOURCES) - 1), cut=st.floats(0, 1), tail=st.floats(0, 1))
def test_truncated_real_scripts_never_raise(index: int, cut: float, tail: float) -> None:
    source = SOURCES[index]
    start = int(len(source) * min(cut, tail))
    end = int(len(source) * max(cut, tail))
    _assert_clean(analyze_source(source[:end], "t.py", CUDA))
    _assert_clean(analyze_source(source[start:end], "t.py", CUDA))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PYTHON_PIECES), max_size=40).map("".join))
def test_generated_fragments_never_raise(source: str) -> None:
    _assert_clean(analyze_source(source, "g.py", CUDA))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(source: str) -> None:
    _assert_clean(analyze_source(source, "r.py", CUDA))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    index=st.integers(min_value=0, max_value=len(SOURCES) - 1),
    position=st.floats(0, 1),
    junk=st.sampled_from(["", "\n", "    ", "x", ")", "# noqa", ".item()", "\n    loss.backward()\n"]),
)
def test_fixing_a_parsing_file_keeps_it_parsing(index: int, position: float, junk: str) -> None:
    source = SOURCES[index]
    at = int(len(source) * position)
    mutated = source[:at] + junk + source[at:]
    try:
        ast.parse(mutated)
    except SyntaxError:
        return
    result = fix_source(mutated, "m.py", CUDA, unsafe=True)
    ast.parse(result.source)
    _assert_clean(result.remaining)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
def test_notebook_junk_is_a_clear_error(text: str) -> None:
    try:
        _assert_clean(analyze_notebook(text, "n.ipynb", CUDA))
    except ValueError as exc:  # the documented way to say "not a notebook"
        assert str(exc)
