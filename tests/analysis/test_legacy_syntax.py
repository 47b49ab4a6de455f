"""Code from before Python 3.7 that uses ``async`` as a name (torch 0.3's ``.cuda(async=True)``): a TT000
at each such word, with torch 0.4's rename as the fix where it is a tensor move's keyword, and the rest
of the file analysed as if it were renamed.  Invented look-alikes of 2017-2018 training scripts."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchtriage.analysis.autofix import fix_source
from torchtriage.analysis.engine import analyze_source
from torchtriage.analysis.parsing import compile_tree, parse_source

TRAIN = textwrap.dedent(
    """
    import torch

    def train(loader, model, optimizer):
        for inputs, targets in loader:
            inputs, targets = inputs.cuda(), targets.cuda(async=True)
            loss = torch.nn.functional.cross_entropy(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(loss.item())


    class Prefetcher:
        def __init__(self, loader, async=False):
            self.loader = loader
    """
).lstrip("\n")


def test_compiling_reads_async_as_a_name_of_the_same_length() -> None:
    with pytest.raises(SyntaxError):
        compile("x.cuda(async=True)\n", "<string>", "exec", ast.PyCF_ONLY_AST)
    tree = compile_tree("y = x.cuda(async=True)\nasync def f():\n    async with a:\n        pass\n")
    call = tree.body[0].value  # type: ignore[attr-defined]
    assert call.keywords[0].col_offset == 11 and call.keywords[0].arg != "async"
    assert isinstance(tree.body[1], ast.AsyncFunctionDef)  # the real keyword is left alone


def test_a_legacy_file_gets_a_syntax_error_per_word_and_the_rules_findings() -> None:
    found = analyze_source(TRAIN, "train.py")
    errors = [f for f in found if f.code == "TT000"]
    assert [(f.span.line, f.span.column, f.span.end_column) for f in errors] == [(5, 55, 60), (14, 32, 37)]
    assert all("`async` is a reserved word" in f.message for f in errors)
    assert errors[0].fix is not None and errors[1].fix is None  # a parameter is renamed by hand
    codes = {(f.code, f.span.line, f.span.column) for f in found}
    assert ("TT301", 5, 27) in codes  # inputs.cuda(): blocking
    assert not any(c == "TT301" and line == 5 and col > 27 for c, line, col in codes)  # async=True was non-blocking
    assert ("TT102", 10, 9) in codes or ("TT101", 10, 15) in codes  # the rest of the file is analysed


def test_the_fix_renames_the_keyword_and_the_file_parses_again() -> None:
    source = TRAIN.split("\n\nclass Prefetcher")[0] + "\n"
    result = fix_source(source, "train.py")
    assert "targets.cuda(non_blocking=True)" in result.source and "async" not in result.source
    assert not isinstance(parse_source(result.source), list) and compile(result.source, "train.py", "exec")


def test_other_syntax_errors_are_reported_where_they_are() -> None:
    broken = parse_source("x = (1,\ny = x.cuda(async=True)\n")
    assert not isinstance(broken, ast.Module) and broken.code == "TT000"
