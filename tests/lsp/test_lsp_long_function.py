"""Typing inside a long function, through the real server: every published version shows
exactly what a fresh analysis of that text finds, and the fixes built after publishing
match what the diagnostics said (``data.fixable``)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import SELECT, edit, open_text, wait_for

from incremental_support import long_function_file  # an ~800-line main()

from torchtriage.analysis import analyze_source
from torchtriage.config import Settings


def _expected(text: str) -> list[tuple[object, ...]]:
    findings = analyze_source(text, "main.py", Settings(select=tuple(SELECT)))
    return [
        (f.code, f.span.line - 1, f.span.column - 1, f.span.end_line - 1, f.span.end_column - 1, f.message, f.fix is not None)
        for f in findings
    ]


def _published(client: LanguageClient, uri: str) -> list[tuple[object, ...]]:
    return [
        (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, d.message,
         d.data["fixable"])
        for d in client.diagnostics.get(uri, [])
    ]


async def test_edits_in_a_long_function_publish_what_a_fresh_analysis_finds(client: LanguageClient, tmp_path: Path):
    text = long_function_file(12).replace('    device = torch.device("cpu")\n', '    device = torch.device("cuda")\n')
    path = tmp_path / "main.py"
    path.write_text(text)
    uri = path.as_uri()
    open_text(client, uri, text)
    await wait_for(lambda: 1 in client.published_versions.get(uri, []), what="the first diagnostics")
    lines = text.split("\n")
    step = lines.index("            total = loss.item()")
    edits = [  # (line, new line): in the step loop, in the set-up, clearing and adding findings
        (step, "            total = loss.item() * 2"),
        (step, "            total = loss.detach()"),
        (step, "            total = loss.item()  # noqa"),
        (step, "            total = float(loss)"),
        (lines.index("            x, y = x.to(device), y.to(device)"), "            x, y = x.cuda(), y.cuda()"),
        (step, "            total = loss.item(); print(out.sum().item())"),
    ]
    seen = [_expected(text)]
    for version, (line, new) in enumerate(edits, start=2):
        lines[line] = new
        text = "\n".join(lines)
        edit(client, uri, version, (line, 0), (line + 1, 0), new + "\n")
        await wait_for(lambda: version in client.published_versions.get(uri, []), what=f"version {version}")
        expected = _expected(text)
        seen.append(expected)
        # The first publish of a version may guess data.fixable before the fixes are built;
        # the server publishes again if a guess was wrong, so the last publish is exact.
        await wait_for(lambda: _published(client, uri) == expected, what=f"the findings of version {version}")
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line + 1, character=0)),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        fixes = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix
                 and not a.title.startswith("Suppress")]
        fixable_here = [e for e in expected if e[1] <= line <= e[3] and e[6]]
        assert len(fixes) == len(fixable_here), (version, [a.title for a in fixes], fixable_here)
    assert sum(1 for a, b in zip(seen, seen[1:]) if a != b) >= 3, "the edits should change the findings"
