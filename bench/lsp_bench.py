"""Language-server latency: first open and one-line edits -> publishDiagnostics.

Starts the real server (``python -m torchtriage lsp``) over stdio, opens a
generated 1,000-line training file, then makes one-line edits (incremental
didChange) and measures, for each, the time from sending the didChange to
receiving the publishDiagnostics that carries its version.  Edits are spaced
out (as a person types a line, then pauses), so each one is measured alone.

    python bench/lsp_bench.py [--edits 60] [--debounce-ms N] [--out bench/RESULTS-lsp.md]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

MODEL_BLOCK = '''
class Block{i}(nn.Module):
    """Residual MLP block {i}."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(self.norm(x))
        h = F.gelu(h)
        h = self.drop(self.fc2(h))
        return x + h


def init_block{i}(block: Block{i}) -> None:
    for module in block.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)

'''

TRAIN = '''

def train(model, loader, optimizer, device, epochs: int = 1) -> float:
    total = 0.0
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            if step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
    return total


if __name__ == "__main__":
    device = torch.device("cuda")
    data = TensorDataset(torch.randn(4096, 64), torch.randn(4096, 64))
    loader = DataLoader(data, batch_size=64, shuffle=True)
    model = nn.Sequential(*[Block0(64, 256) for _ in range(4)]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train(model, loader, optimizer, device)
'''


# The one-line edits, in turn: a code change, a comment, a change that clears a finding.
EDITS = (
    "            total += loss.item() * {n}",
    "            total += loss.item()  # edit {n}",
    "            total += loss.detach() + {n}",
)


def training_file(lines: int = 1000) -> str:
    head = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    head += "from torch.utils.data import DataLoader, TensorDataset\n"
    body, i = "", 0
    while len((head + body + TRAIN).splitlines()) + MODEL_BLOCK.count("\n") <= lines:
        body += MODEL_BLOCK.format(i=i)
        i += 1
    text = head + body + TRAIN
    missing = lines - len(text.splitlines())
    return head + body + "\n" * max(missing, 0) + TRAIN


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def run(edits: int, debounce_ms: float | None) -> dict[str, object]:
    text = training_file()
    folder = Path(tempfile.mkdtemp(prefix="lsp-bench-"))
    path = folder / "train_big.py"
    path.write_text(text)
    uri = path.as_uri()
    client = LanguageClient("lsp-bench", "1")
    published: dict[int | None, float] = {}
    arrived = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams) -> None:
        published[params.version] = time.perf_counter()
        published["count"] = len(params.diagnostics)  # type: ignore[index]
        arrived.set()

    await client.start_io(sys.executable, "-m", "torchtriage", "lsp")
    options = {} if debounce_ms is None else {"debounceMs": debounce_ms}
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=folder.as_uri(), initialization_options=options)
    )
    client.initialized(types.InitializedParams())

    async def wait_version(version: int, sent: float) -> float:
        while version not in published:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 30)
        return (published[version] - sent) * 1000

    sent = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    first_open = await wait_version(1, sent)
    target_line = text.splitlines().index("            total += loss.item()")
    latencies = []
    for n in range(edits):
        version = n + 2
        new_line = EDITS[n % len(EDITS)].format(n=n)
        change = types.TextDocumentContentChangePartial(
            range=types.Range(
                start=types.Position(line=target_line, character=0),
                end=types.Position(line=target_line + 1, character=0),
            ),
            text=new_line + "\n",
        )
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]
            )
        )
        latencies.append(await wait_version(version, sent))
        await asyncio.sleep(0.2)  # a pause between edits
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {
        "lines": len(text.splitlines()),
        "findings": published.get("count"),  # type: ignore[call-overload]
        "first_open_ms": first_open,
        "edit_p50_ms": statistics.median(latencies),
        "edit_p95_ms": percentile(latencies, 0.95),
        "edit_max_ms": max(latencies),
        "edits": edits,
    }


def core_analysis(repeats: int = 15) -> dict[str, float]:
    """Medians in this process: a full analysis of the file, and an incremental one after each bench edit."""
    from torchtriage.analysis import analyze_source
    from torchtriage.analysis.engine import IncrementalAnalyzer

    text = training_file()
    line = "            total += loss.item()\n"
    full, edit = [], []
    analyzer = IncrementalAnalyzer("/tmp/train_big.py")
    analyzer.analyze(text)
    for n in range(repeats):
        started = time.perf_counter()
        analyze_source(text, "/tmp/train_big.py")
        full.append((time.perf_counter() - started) * 1000)
        edited = text.replace(line, EDITS[n % len(EDITS)].format(n=n) + "\n")
        started = time.perf_counter()
        analyzer.analyze(edited)
        edit.append((time.perf_counter() - started) * 1000)
    return {"core_full_ms": statistics.median(full), "core_edit_ms": statistics.median(edit)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=60)
    parser.add_argument("--debounce-ms", type=float, help="fixed debounce (default: the server's adaptive one)")
    parser.add_argument("--out", type=Path, help="append a Markdown row here")
    args = parser.parse_args()
    result = asyncio.run(run(args.edits, args.debounce_ms))
    result.update(core_analysis())
    mode = "idle: none, busy: 20 ms" if args.debounce_ms is None else f"{args.debounce_ms:g} ms"
    row = (
        f"| {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} | {mode} | "
        f"{result['lines']} | {result['findings']} | {result['first_open_ms']:.0f} | {result['edit_p50_ms']:.0f} | "
        f"{result['edit_p95_ms']:.0f} | {result['edit_max_ms']:.0f} | {result['core_full_ms']:.0f} | "
        f"{result['core_edit_ms']:.0f} | {result['edit_p50_ms'] - result['core_edit_ms']:.0f} | {result['edits']} |"
    )
    print(result)
    print(row)
    if args.out:
        with args.out.open("a", encoding="utf-8") as handle:
            handle.write(row + "\n")


if __name__ == "__main__":
    print(f"python {platform.python_version()}", file=sys.stderr)
    main()
