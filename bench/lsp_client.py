"""The bench's LSP client: one server session over stdio, timing publishes and code actions."""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


RESOLVING = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(value_set=["quickfix", "source.fixAll"])
            ),
            data_support=True,
            resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]),
        )
    )
)


@dataclass
class Session:
    """The real server over stdio, with the publish time of every (uri, version) seen."""

    capabilities: types.ClientCapabilities
    client: LanguageClient = field(default_factory=lambda: LanguageClient("lsp-bench", "1"))
    published: dict[tuple[str, int | None], float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # diagnostics per uri, last publish
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self, folder: Path, options: dict[str, Any]) -> None:
        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            self.published[(params.uri, params.version)] = time.perf_counter()
            self.counts[params.uri] = len(params.diagnostics)
            self.arrived.set()

        await self.client.start_io(sys.executable, "-m", "torchtriage", "lsp")
        await self.client.initialize_async(
            types.InitializeParams(capabilities=self.capabilities, root_uri=folder.as_uri(), initialization_options=options)
        )
        self.client.initialized(types.InitializedParams())

    async def wait_published(self, uri: str, version: int, sent: float) -> float:
        """Milliseconds from ``sent`` to the publish of ``version`` on ``uri``."""
        while (uri, version) not in self.published:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 30)
        return (self.published[(uri, version)] - sent) * 1000

    async def code_actions(self, uri: str, line: int) -> tuple[float, float | None]:
        """Milliseconds for the code actions on a line, and for resolving fix-all when it came lazily."""
        here = types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0))
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=here, context=types.CodeActionContext(diagnostics=[])
        )
        started = time.perf_counter()
        actions = await self.client.text_document_code_action_async(params)
        took = (time.perf_counter() - started) * 1000
        fix_all = [a for a in actions or [] if isinstance(a, types.CodeAction) and str(a.kind).startswith("source.fixAll")]
        assert fix_all, f"no fix-all action: the bench needs a safe fix on this line: {actions}"
        if fix_all[0].edit is not None:
            return took, None
        started = time.perf_counter()
        resolved = await self.client.code_action_resolve_async(fix_all[0])
        assert resolved.edit is not None, "fix-all resolved without an edit"
        return took, (time.perf_counter() - started) * 1000

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def line_change(line: int, text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line + 1, character=0)),
        text=text + "\n",
    )


def summary(latencies: list[float], actions: list[float], resolves: list[float]) -> dict[str, object]:
    result: dict[str, object] = {
        "edit_p50_ms": statistics.median(latencies),
        "edit_p95_ms": percentile(latencies, 0.95),
        "edit_max_ms": max(latencies),
        "action_p50_ms": statistics.median(actions),
        "action_p95_ms": percentile(actions, 0.95),
        "resolve_p50_ms": statistics.median(resolves) if resolves else None,
        "resolve_p95_ms": percentile(resolves, 0.95) if resolves else None,
        "edits": len(latencies),
    }
    return result
