"""The DataLoader resolver behind TT302-TT304 and the grad-mode helper behind TT501."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchtriage.analysis import analyze_source, fix_source
from torchtriage.analysis.context import ModuleContext
from torchtriage.analysis.rules._tt501_grad_mode import grad_disabled
from torchtriage.analysis.rules._loaders import dataloader_calls, loops_reading, setting
from torchtriage.config import Settings


def _ctx(source: str, path: str = "train.py") -> ModuleContext:
    source = textwrap.dedent(source).lstrip("\n")
    return ModuleContext(source=source, tree=ast.parse(source), path=path)


def _setting_values(source: str, name: str) -> tuple[list[object], bool, bool]:
    ctx = _ctx(source)
    (call,) = list(dataloader_calls(ctx))
    found = setting(ctx, call, name)
    values = [ast.literal_eval(v) if isinstance(v, ast.Constant) else ast.unparse(v) for v in found.values]
    return values, found.may_be_default, found.unknown


def test_mnist_style_conditional_update_keeps_the_default_possible() -> None:
    values, may_be_default, unknown = _setting_values(
        """
        import torch
        train_kwargs = {"batch_size": 64}
        if use_cuda:
            cuda_kwargs = {"num_workers": 1, "pin_memory": True}
            train_kwargs.update(cuda_kwargs)
        loader = torch.utils.data.DataLoader(ds, **train_kwargs)
        """,
        "num_workers",
    )
    assert (values, may_be_default, unknown) == ([1], True, False)


def test_unconditional_item_assignment_and_dict_call_override() -> None:
    values, may_be_default, unknown = _setting_values(
        """
        from torch.utils import data
        def make(ds):
            kw = dict(batch_size=8, num_workers=0)
            kw["num_workers"] = 6
            return data.DataLoader(ds, **kw)
        """,
        "num_workers",
    )
    assert (values, may_be_default, unknown) == ([6], False, False)


@pytest.mark.parametrize(
    "source",
    [
        "def make(ds, kw):\n    return DataLoader(ds, **kw)\n",  # a parameter
        "kw = yaml.safe_load(f)\nDataLoader(ds, **kw)\n",  # from a file
        "kw = {}\nkw = other\nDataLoader(ds, **kw)\n",  # rebound
        "kw = {}\nkw.setdefault('num_workers', 2)\nDataLoader(ds, **kw)\n",  # mutated opaquely
        "DataLoader(ds, *args)\n",
    ],
)
def test_unresolvable_kwargs_are_unknown(source: str) -> None:
    _, _, unknown = _setting_values("from torch.utils.data import DataLoader\n" + source, "num_workers")
    assert unknown


def test_positional_arguments_follow_the_signature() -> None:
    values, may_be_default, _ = _setting_values(
        "import torch\ntorch.utils.data.DataLoader(ds, 32, True, None, None, 2, None, True)\n", "pin_memory"
    )
    assert (values, may_be_default) == ([True], False)


def test_loader_is_linked_through_a_function_parameter() -> None:
    ctx = _ctx(
        """
        from torch.utils.data import DataLoader
        def run(model, data, opt):
            for x, y in data:
                model(x).sum().backward(); opt.step()
        loader = DataLoader(ds, num_workers=2)
        for epoch in range(3):
            run(model, loader, opt)
        """
    )
    (call,) = list(dataloader_calls(ctx))
    assert [region.node.lineno for region in loops_reading(ctx, call)] == [3]


def test_test_files_are_not_checked_for_loader_settings() -> None:
    source = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=4)\n"
    settings = Settings(select=("TT302",))
    assert analyze_source(source, "train.py", settings)
    assert not analyze_source("import pytest\n" + source, "tests/test_loader.py", settings)
    assert not analyze_source(source + "\n\ndef test_loads():\n    assert loader\n", "loader_test.py", settings)
    trains = source + "for x, y in loader:\n    model(x).sum().backward()\n"
    assert analyze_source(trains, "pmnist_test.py", settings)  # named like a test, holds none, trains: a training script
    assert not analyze_source(source, "test_net.py", settings)  # holds no test and does not train: an evaluation script


def test_grad_disabled_through_callers_and_decorators() -> None:
    ctx = _ctx(
        """
        import torch
        def inner(model, x):
            return model(x)
        @torch.inference_mode()
        def outer(model, x):
            return inner(model, x)
        def elsewhere(model, x):
            return model(x)
        elsewhere(model, x)
        """
    )
    calls = {
        node.lineno: node
        for node in ast.walk(ctx.tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "model"
    }
    assert grad_disabled(ctx, calls[3])
    assert not grad_disabled(ctx, calls[8])


def test_wrap_fix_keeps_crlf_line_endings_and_comments() -> None:
    source = (
        "import torch\r\n"
        "def validate(model, val_loader):\r\n"
        "    model.eval()\r\n"
        "    for x, y in val_loader:  # all of it\r\n"
        "        out = model(x)\r\n"
        "\r\n"
        "        # keep\r\n"
        "        print(out.shape)\r\n"
    )
    fixed = fix_source(source, settings=Settings(select=("TT501",)), unsafe=True).source
    assert fixed == (
        "import torch\r\n"
        "def validate(model, val_loader):\r\n"
        "    model.eval()\r\n"
        "    with torch.no_grad():\r\n"
        "        for x, y in val_loader:  # all of it\r\n"
        "            out = model(x)\r\n"
        "\r\n"
        "            # keep\r\n"
        "            print(out.shape)\r\n"
    )


def test_wrap_fix_declines_loops_holding_multiline_strings() -> None:
    source = textwrap.dedent(
        '''
        import torch
        def validate(model, val_loader):
            model.eval()
            for x, y in val_loader:
                out = model(x)
                print("""shape:
        {}""".format(out.shape))
        '''
    ).lstrip("\n")
    findings = analyze_source(source, settings=Settings(select=("TT501",)))
    assert [f.code for f in findings] == ["TT501"] and findings[0].fix is None
