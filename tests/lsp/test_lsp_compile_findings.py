"""Runtime findings reach the editor: a real profile through the server, TTR5xx as Information diagnostics."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import open_text, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("torchtriage.runtime.profiling.finish") is None or importlib.util.find_spec("torch") is None,
        reason="needs the runtime bridge and torch",
    ),
]

SCRIPT = textwrap.dedent(
    """\
    import torch

    torch.set_num_threads(1)


    class Body(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(32, 32)

        def forward(self, x):
            h = self.a(x).relu()
            if h.mean().item() > 0.1:  # BREAK
                h = h * 2
            return h


    head = torch.nn.Linear(32, 4).to(torch.bfloat16)
    head.register_buffer("scale", torch.ones(4))
    body = Body()
    step = torch.compile(body, backend="eager")
    opt = torch.optim.SGD(list(body.parameters()) + list(head.parameters()), lr=0.01)
    x = torch.randn(16, 32)
    for i in range(100_000):
        out = head(step(x).bfloat16()) * head.scale  # PROMOTE
        loss = out.float().square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    """
)


def line_of(tag: str) -> int:
    return next(i for i, line in enumerate(SCRIPT.splitlines()) if f"# {tag}" in line)  # 0-based, as LSP counts


async def test_graph_break_and_dtype_churn_are_diagnostics_on_their_lines(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "compiled_bf16.py"
    script.write_text(SCRIPT, encoding="utf-8")
    uri = script.as_uri()
    open_text(client, uri, SCRIPT)
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.profile", arguments=[uri]))

    def runtime() -> dict[str, types.Diagnostic]:
        found = [d for d in client.diagnostics.get(uri, ()) if d.source == "torchtriage-profile" and str(d.code).startswith("TTR5")]
        return {str(d.code): d for d in found}

    found = await wait_for(lambda: {"TTR501", "TTR503"} <= set(runtime()) and runtime(), what="TTR501 and TTR503 diagnostics")
    graph_break, churn = found["TTR501"], found["TTR503"]
    assert graph_break.range.start.line == line_of("BREAK") and churn.range.start.line == line_of("PROMOTE")
    assert graph_break.severity == churn.severity == types.DiagnosticSeverity.Information
    assert "Tensor.item()" in graph_break.message and "Try: Move the .item()" in graph_break.message
    assert "aten::mul mixes bfloat16" in churn.message and "Try: " in churn.message
