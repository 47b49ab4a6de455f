"""The workspace index: open documents analysed within their project, re-published when
another file changes what runs every step in them (real server process over stdio)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import codes, open_text, replace_all, wait_for

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
