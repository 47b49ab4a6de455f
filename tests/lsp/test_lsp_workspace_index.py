"""The workspace index: open documents analysed within their project, re-published when
another file changes what runs every step in them (real server process over stdio)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import SELECT, codes, edit, open_text, replace_all, wait_for

ENGINE = """import torch
from metrics import log_step


def train_one_epoch(model, loader, opt):
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()
        log_step(loss)
"""

METRICS = """import torch


def log_step(loss):
    return loss.item()
"""


def _project(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    engine = tmp_path / "engine.py"
    metrics = tmp_path / "metrics.py"
    engine.write_text(ENGINE)
    metrics.write_text(METRICS)
    return engine, metrics


def _tt101(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.code == "TT101"]


async def test_callee_in_another_file_becomes_hot_and_follows_edits_of_the_caller(client: LanguageClient, tmp_path: Path):
    engine, metrics = _project(tmp_path)
    open_text(client, metrics.as_uri(), METRICS)
    found = await wait_for(lambda: _tt101(client, metrics.as_uri()), what="TT101 from the project index")
    assert found[0].range.start.line == 4
    assert "Runs every step: called from engine.py:10." in found[0].message

    # Editing the (open) caller so it no longer calls the helper per step re-publishes the helper.
    open_text(client, engine.as_uri(), ENGINE)
    await wait_for(lambda: client.diagnostics.get(engine.as_uri()) is not None, what="engine diagnostics")
    replace_all(client, engine.as_uri(), ENGINE.replace("        log_step(loss)\n", ""), version=2)
    await wait_for(lambda: not _tt101(client, metrics.as_uri()), what="TT101 to go away")
    assert codes(client.diagnostics[metrics.as_uri()]) == []

    # Closing the caller: the helper sees the caller's text on disk again (which calls it).
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=engine.as_uri()))
    )
    await wait_for(lambda: _tt101(client, metrics.as_uri()), what="TT101 back after close")


async def test_watched_file_change_on_disk_updates_open_documents(client: LanguageClient, tmp_path: Path):
    engine, metrics = _project(tmp_path)
    open_text(client, metrics.as_uri(), METRICS)
    await wait_for(lambda: _tt101(client, metrics.as_uri()), what="TT101 from the project index")
    engine.write_text(ENGINE.replace("        log_step(loss)\n", ""))
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=engine.as_uri(), type=types.FileChangeType.Changed)]
        )
    )
    await wait_for(lambda: not _tt101(client, metrics.as_uri()), what="TT101 to go away after the disk change")


async def test_a_file_nobody_calls_per_step_stays_quiet(client: LanguageClient, tmp_path: Path):
    _engine, metrics = _project(tmp_path)
    other = tmp_path / "other.py"
    other.write_text(METRICS.replace("log_step", "log_epoch"))
    open_text(client, other.as_uri(), other.read_text())
    open_text(client, metrics.as_uri(), METRICS)
    await wait_for(lambda: _tt101(client, metrics.as_uri()), what="TT101 in the called helper")
    assert codes(client.diagnostics.get(other.as_uri())) == []


# --- after edits, the published findings are those of a fresh project analysis ------------

MAIN = """import torch
from engine import train_one_epoch


def main(model, loader, opt):
    device = torch.device("cuda")
    model.to(device)
    for epoch in range(3):
        train_one_epoch(model, loader, opt)
"""

UTILS = """import torch


def summarise(values):
    total = 0.0
    for value in values:
        total += value.item()
    return total
"""


def _fresh(root: Path, texts: dict[Path, str]) -> dict[Path, list[tuple[object, ...]]]:
    """What a fresh analysis of the whole project finds in each open file, as diagnostics show it."""
    from torchtriage.analysis.project.program import Project
    from torchtriage.lsp.settings import SettingsManager

    manager = SettingsManager(warn=lambda message: None)
    manager.update_client({"select": SELECT})
    settings = manager.for_path(root / "engine.py")
    entries = []
    for path in sorted(root.glob("*.py")):
        text = texts.get(path, path.read_text())
        entries.append((str(path), path.name, text))
    project = Project(entries, settings, relative_labels=True)
    return {
        path: [
            (f.code, f.span.line - 1, f.span.column - 1, f.span.end_line - 1, f.span.end_column - 1, f.message)
            for f in project.analyze(str(path))
        ]
        for path in texts
    }


def _published(client: LanguageClient, path: Path) -> list[tuple[object, ...]] | None:
    diagnostics = client.diagnostics.get(path.as_uri())
    if diagnostics is None:
        return None
    return [
        (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, d.message)
        for d in diagnostics
    ]


def _replace_line(client: LanguageClient, path: Path, texts: dict[Path, str], versions: dict[Path, int], line: int, new: str) -> None:
    """One incremental edit: line ``line`` (0-based) becomes ``new`` (several lines, or none)."""
    lines = texts[path].split("\n")
    lines[line : line + 1] = new.split("\n") if new else []
    texts[path] = "\n".join(lines)
    versions[path] += 1
    replacement = new + "\n" if new else ""
    edit(client, path.as_uri(), versions[path], (line, 0), (line + 1, 0), replacement)


async def test_after_edits_the_findings_are_those_of_a_fresh_project_analysis(client: LanguageClient, tmp_path: Path):
    engine, metrics = _project(tmp_path)
    (tmp_path / "main.py").write_text(MAIN)
    utils = tmp_path / "utils.py"
    utils.write_text(UTILS)
    texts = {engine: ENGINE, metrics: METRICS, utils: UTILS}
    versions = {path: 1 for path in texts}
    for path, text in texts.items():
        open_text(client, path.as_uri(), text)

    seen: list[object] = []

    async def settled(what: str) -> None:
        expected = _fresh(tmp_path, texts)
        seen.append(expected)
        await wait_for(
            lambda: all(_published(client, path) == expected[path] for path in texts), timeout=30, what=what
        )

    await settled("the first build")
    assert _published(client, metrics), "the project makes metrics.log_step hot"
    steps = [
        (engine, 9, "", "the step loop no longer calls log_step"),
        (engine, 8, "        opt.step()\n        log_step(loss)\n        summarise(loss)", "a new per-step call"),
        (engine, 1, "from metrics import log_step\nfrom utils import summarise", "the import it needs"),
        (utils, 5, "    for value in values:\n        print(value)", "an edit in the callee"),
        (engine, 6, "    for x, y in loader:\n        x = x.cuda()", "a device copy in the step"),
        (metrics, 4, "    return float(loss)", "the helper reads the value another way"),
    ]
    for path, line, new, what in steps:
        _replace_line(client, path, texts, versions, line, new)
        await settled(what)
    changes = sum(1 for before, after in zip(seen, seen[1:]) if before != after)
    assert changes >= 5, "each edit should change what some open file shows"
