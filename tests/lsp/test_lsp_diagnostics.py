"""Diagnostics pushed and pulled from the real server process."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import DATA, SELECT, apply_text_edits, codes, edit, open_text, replace_all, wait_for

EXAMPLE = (DATA / "train_example.py").read_text()
URI = (DATA / "train_example.py").as_uri()


async def test_diagnostics_appear_with_version_and_go_away_when_fixed(client: LanguageClient):
    open_text(client, URI, EXAMPLE, version=3)
    diagnostics = await wait_for(lambda: client.diagnostics.get(URI), what="diagnostics")
    assert codes(diagnostics) == ["TT101", "TT301", "TT301", "TT303"]
    tt101 = next(d for d in diagnostics if d.code == "TT101")
    assert tt101.range == types.Range(start=types.Position(line=14, character=12), end=types.Position(line=14, character=23))
    assert tt101.source == "torchtriage"
    assert tt101.severity == types.DiagnosticSeverity.Warning

    fixed = EXAMPLE.replace("    total = loss.item()\n", "")
    replace_all(client, URI, fixed, version=4)
    await wait_for(lambda: "TT101" not in codes(client.diagnostics[URI]), what="TT101 to go away")
    assert codes(client.diagnostics[URI]) == ["TT301", "TT301", "TT303"]


async def test_utf16_columns(client: LanguageClient):
    text = EXAMPLE.replace("    total = loss.item()", "    total = len('😀😀') + loss.item()")
    open_text(client, URI, text)
    diagnostics = await wait_for(lambda: client.diagnostics.get(URI), what="diagnostics")
    tt101 = next(d for d in diagnostics if d.code == "TT101")
    # "    total = len('😀😀') + " is 24 characters but 26 UTF-16 code units
    assert tt101.range.start == types.Position(line=14, character=26)
    assert tt101.range.end == types.Position(line=14, character=37)


async def test_pull_diagnostics(client: LanguageClient):
    open_text(client, URI, EXAMPLE)
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=URI))
    )
    assert report.kind == "full"
    assert codes(report.items) == ["TT101", "TT301", "TT301", "TT303"]


async def test_syntax_error_keeps_last_good_findings(client: LanguageClient):
    open_text(client, URI, EXAMPLE, version=1)
    await wait_for(lambda: "TT101" in codes(client.diagnostics.get(URI)), what="first diagnostics")
    # Mid-typing on line 12 (0-based 11): `loss.backward(` without the closing paren.
    edit(client, URI, 2, (11, 17), (11, 19), "(")
    await wait_for(lambda: "TT000" in codes(client.diagnostics[URI]), what="syntax diagnostic")
    diagnostics = client.diagnostics[URI]
    assert codes(diagnostics) == ["TT000", "TT101", "TT301", "TT301", "TT303"]
    # the kept TT101 stays on its line
    assert next(d for d in diagnostics if d.code == "TT101").range.start.line == 14


async def test_stale_results_never_win_after_rapid_changes(client: LanguageClient):
    open_text(client, URI, EXAMPLE, version=0)
    await wait_for(lambda: client.diagnostics.get(URI), what="first diagnostics")
    versions = []
    for version in range(1, 501):
        text = EXAMPLE if version % 2 else EXAMPLE.replace("    total = loss.item()\n", "")
        text += f"# edit {version}\n"
        replace_all(client, URI, text, version)
        versions.append(version)
    # The last text (version 500, even) has no TT101.
    await wait_for(
        lambda: _last_version(client) == 500,
        what="diagnostics for version 500",
    )
    await asyncio.sleep(0.5)  # nothing older may arrive later
    published = client.published_versions[URI]  # type: ignore[attr-defined]
    assert published[-1] == 500 and published == sorted(published)
    assert codes(client.diagnostics[URI]) == ["TT301", "TT301", "TT303"]


def _last_version(client: LanguageClient) -> int | None:
    versions = client.published_versions.get(URI)  # type: ignore[attr-defined]
    return versions[-1] if versions else None


async def test_incremental_edits_publish_what_a_fresh_analysis_finds(client: LanguageClient):
    """Partial edits that add, remove and change lines above, inside and below the step loop:
    after each one the server (which re-parses only what changed) publishes exactly the
    findings of a fresh analysis of the same text, at the same positions."""
    from torchtriage.analysis import analyze_source
    from torchtriage.config import Settings

    settings = Settings(select=tuple(SELECT))
    open_text(client, URI, EXAMPLE, version=1)
    await wait_for(lambda: _last_version(client) == 1, what="first diagnostics")
    text = EXAMPLE
    loop_line = next(i for i, line in enumerate(text.splitlines()) if line.lstrip().startswith("for "))
    steps = [
        ((0, 0), (0, 0), "# a new first line\n"),  # shifts everything below
        ((loop_line + 2, 0), (loop_line + 2, 0), "        print(loss.item())\n"),  # a new finding in the loop
        ((1, 0), (2, 0), ""),  # removes a line above
        ((loop_line + 1, 0), (loop_line + 1, 0), "        x = (\n"),  # breaks the syntax
        ((loop_line + 1, 0), (loop_line + 2, 0), ""),  # mends it
        ((len(text.splitlines()), 0), (len(text.splitlines()), 0), "\n\ndef late(t):\n    return t.item()\n"),
    ]
    for version, (start, end, new_text) in enumerate(steps, start=2):
        edit(client, URI, version, start, end, new_text)
        text = apply_text_edits(text, [types.TextEdit(range=_range(start, end), new_text=new_text)])
        await wait_for(lambda: _last_version(client) == version, what=f"diagnostics for version {version}")
        expected = analyze_source(text, str(DATA / "train_example.py"), settings)
        if any(f.code == "TT000" for f in expected):
            continue  # mid-typing: the last good findings are kept (tested above)
        published = sorted((str(d.code), d.range.start.line + 1, d.range.start.character + 1) for d in client.diagnostics[URI])
        assert published == sorted((f.code, f.span.line, f.span.column) for f in expected), version


def _range(start: tuple[int, int], end: tuple[int, int]) -> types.Range:
    return types.Range(start=types.Position(*start), end=types.Position(*end))
