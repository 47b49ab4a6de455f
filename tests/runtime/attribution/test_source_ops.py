"""Operator-slot ops placed on their line from the function's source (``source_ops``): fast, no torch run."""

from __future__ import annotations

import textwrap
from pathlib import Path

from torchtriage.runtime.diagnosis.compile_findings import guard_kind
from torchtriage.runtime.attribution.source_ops import SourceOps

SOURCE = textwrap.dedent(
    """\
    import torch


    class Net(torch.nn.Module):
        def forward(self, x):
            h = self.a(x) * self.scale
            h = h + offset
            g = h * 2

            def inner(y):
                return y * 3

            h -= 1
            return inner(g)


    @torch.no_grad()
    def evaluate(x, w):
        return x @ w


    loss = model(x) * head.scale
    """
)


def write(tmp_path: Path) -> str:
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="utf-8")
    return str(path)


def test_one_matching_operator_is_the_line(tmp_path: Path) -> None:
    path = write(tmp_path)
    source = SourceOps()
    assert source.line_of(path, "forward", 5, "aten::add") == 7
    assert source.line_of(path, "forward", 5, "aten::sub_") == 13  # h -= 1 (augmented)
    # a decorated function: Python's first line is the decorator's
    assert source.line_of(path, "evaluate", 17, "aten::mm") == 19
    # module level: only its own statements, not the functions defined in it
    assert source.line_of(path, "<module>", 1, "aten::mul") == 22


def test_several_candidates_need_the_operand_name(tmp_path: Path) -> None:
    path = write(tmp_path)
    source = SourceOps()
    # forward has `* self.scale` and `* 2` (inner's `* 3` is its own frame): ambiguous without a name
    assert source.line_of(path, "forward", 5, "aten::mul") is None
    assert source.line_of(path, "forward", 5, "aten::mul", {"scale"}) == 6
    assert source.line_of(path, "forward", 5, "MulBackward0", {"scale"}) == 6  # a backward node names its forward op
    assert source.line_of(path, "forward", 5, "aten::mul", {"nowhere"}) is None


def test_unknown_ops_functions_and_files_give_no_line(tmp_path: Path) -> None:
    path = write(tmp_path)
    source = SourceOps()
    assert source.line_of(path, "forward", 5, "aten::relu") is None  # not an operator slot
    assert source.line_of(path, "missing", 5, "aten::add") is None
    assert source.line_of(str(tmp_path / "gone.py"), "forward", 5, "aten::add") is None
    assert source.assigned_name(path, 7) == "h" and source.assigned_name(path, 22) == "loss"


def test_failed_guards_say_what_changed() -> None:
    # guard texts as dynamo 2.13 wrote them in this project's runs
    assert guard_kind("tensor 'x' size mismatch at index 0. expected 8, actual 9") == "shape"
    assert guard_kind("tensor 'args[0]' size mismatch at index 0. expected 8, actual 9") == "shape"
    assert guard_kind("___stack0 == 0.24247708916664124") == "value"
    assert guard_kind("tensor 'x' dtype mismatch. expected Float, actual BFloat16") == "dtype"
    assert guard_kind("len(G['__import_torch_dot_nn_dot_modules_dot_module']._global_forward_hooks) != 1") == "length"
    assert guard_kind("something else entirely") == "other"
