"""Language-server latency: first open, one-line edits -> publishDiagnostics, code actions.

Starts the real server (``python -m torchtriage lsp``) over stdio, opens a
generated 1,000-line training file (or, with ``--notebook``, a generated
20-cell, ~600-line notebook), then makes one-line edits (incremental
didChange; in the notebook, inside the training cell) and measures, for each,
the time from sending the didChange to receiving the publishDiagnostics that
carries its version.  Edits are spaced out (as a person types a line, then
pauses), so each one is measured alone.  After each edit's diagnostics the
bench asks for the code actions on the line with a safe fix (as an editor does
when the cursor rests there) and times that request; when the fix-all action
comes back without its edit, the ``codeAction/resolve`` that computes it is
timed too.  ``--client eager`` declares no ``resolveSupport`` (every edit
computed up front); the default client declares it, as VS Code does.

    python bench/lsp_bench.py [--notebook | --file PATH] [--edits 60] [--client resolve|eager]
                              [--debounce-ms N] [--out bench/RESULTS-lsp.md]

``--file PATH`` benches a real file instead (e.g. timm's ``train.py`` fetched at its
pinned HEAD, never committed; ``--file huggingface+pytorch-image-models:train.py`` reads
it from the mirror): it is copied into an empty temp folder (a one-file
project), and the edits change one line in the middle of its longest function,
alternating a trailing comment and a new statement, as one-line incremental changes.
``--in-repo`` opens it inside a copy of its whole repository instead (every ``.py``
file at the mirror's HEAD), so the workspace index models the real project.

Without ``--notebook`` or ``--file`` the standard run benches the generated file, then
timm's ``train.py`` (:data:`REAL_FILE`, when its mirror is present).
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

from lsp_client import RESOLVING, Session, line_change, summary

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


# --- the notebook ---------------------------------------------------------------

NOTEBOOK_IMPORTS = """import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
%matplotlib inline
"""

BLOCK_CHECK = '''def count_block{i}(block: nn.Module) -> int:
    """Trainable parameters of block {i}."""
    return sum(p.numel() for p in block.parameters() if p.requires_grad)


block{i} = Block{i}(64, 256)
init_block{i}(block{i})
out = block{i}(torch.randn(2, 64))
assert out.shape == (2, 64)
print("block {i}:", count_block{i}(block{i}), "parameters")
with torch.no_grad():
    reference = block{i}.fc2(block{i}.fc1(torch.zeros(1, 64)))
print("block {i} at zero:", reference.abs().max())
'''

NOTEBOOK_DATA = """device = torch.device("cuda")
data = TensorDataset(torch.randn(4096, 64), torch.randn(4096, 64))
loader = DataLoader(data, batch_size=64, shuffle=True)
model = nn.Sequential(*[Block0(64, 256) for _ in range(4)]).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
"""

NOTEBOOK_TRAIN = """total = 0.0
for epoch in range(2):
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
"""

NOTEBOOK_EVAL = """model.eval()
with torch.no_grad():
    x, y = next(iter(loader))
    error = F.mse_loss(model(x.to(device)), y.to(device))
print(f"eval loss {error.item():.4f}")
"""

NOTEBOOK_TAIL = "!nvidia-smi\nprint('total', total)\n"
NOTEBOOK_EDITS = tuple(edit[4:] for edit in EDITS)  # the loop is top-level here, so one level less


def notebook_cells(blocks: int = 15) -> list[str]:
    """About 600 lines in 20 code cells: imports, model blocks, data, training loop, eval."""
    cells = [NOTEBOOK_IMPORTS]
    for i in range(blocks):
        heading = f"# Block {i}: a residual MLP, pre-norm, GELU, dropout.\n"
        cells.append(heading + MODEL_BLOCK.format(i=i).strip("\n") + "\n\n\n" + BLOCK_CHECK.format(i=i))
    return cells + [NOTEBOOK_DATA, NOTEBOOK_TRAIN, NOTEBOOK_EVAL, NOTEBOOK_TAIL]


def cell_uri(notebook: Path, index: int) -> str:
    return f"vscode-notebook-cell:{notebook}#cell{index}"


async def run(edits: int, debounce_ms: float | None, capabilities: types.ClientCapabilities) -> dict[str, object]:
    """The file mode: open the 1,000-line file, then edits, each followed by a code-action request."""
    text = training_file()
    folder = Path(tempfile.mkdtemp(prefix="lsp-bench-"))
    path = folder / "train_big.py"
    path.write_text(text)
    uri = path.as_uri()
    session = Session(capabilities)
    await session.start(folder, {} if debounce_ms is None else {"debounceMs": debounce_ms})
    sent = time.perf_counter()
    session.client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    first_open = await session.wait_published(uri, 1, sent)
    lines = text.splitlines()
    target_line = lines.index("            total += loss.item()")
    fix_line = lines.index("            x, y = x.to(device), y.to(device)")
    latencies, actions, resolves = [], [], []
    for n in range(edits):
        version = n + 2
        change = line_change(target_line, EDITS[n % len(EDITS)].format(n=n))
        sent = time.perf_counter()
        session.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]
            )
        )
        latencies.append(await session.wait_published(uri, version, sent))
        await asyncio.sleep(0.05)  # the cursor rests: the editor asks for code actions
        action, resolve = await session.code_actions(uri, fix_line)
        actions.append(action)
        if resolve is not None:
            resolves.append(resolve)
        await asyncio.sleep(0.2)  # a pause between edits
    await session.stop()
    result = {"lines": len(lines), "findings": session.counts.get(uri), "first_open_ms": first_open}
    return result | summary(latencies, actions, resolves)


def _long_function_line(text: str) -> tuple[int, str]:
    """0-based index and text of a statement line in the middle of the file's longest function."""
    import ast

    tree = ast.parse(text)
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    longest = max(funcs, key=lambda f: (f.end_lineno or f.lineno) - f.lineno)
    lines = text.splitlines()
    simple = sorted(
        n.lineno - 1 for n in ast.walk(longest)
        if isinstance(n, (ast.Assign, ast.Expr)) and n.lineno == n.end_lineno and "#" not in lines[n.lineno - 1]
    )
    index = simple[len(simple) // 2]
    return index, lines[index]


def _read_source(source: Path) -> str:
    """A file, or ``owner+name:path`` read from a mirror at its HEAD (fetched at bench time)."""
    if source.exists():
        return source.read_text(encoding="utf-8")
    from corpus import mirror_file

    return mirror_file(str(source)).decode("utf-8")


REAL_FILE = "huggingface+pytorch-image-models:train.py"  # 1,533 lines, one ~740-line main()


def _real_file_available(spec: str = REAL_FILE) -> bool:
    from corpus import MIRRORS

    return (MIRRORS / spec.partition(":")[0] / "repo").is_dir()


def _place(source: Path, text: str, in_repo: bool) -> tuple[Path, Path]:
    """(folder to open, file path): the file alone in a temp folder, or inside a copy of its repository."""
    name = str(source).rpartition(":")[2]
    folder = Path(tempfile.mkdtemp(prefix="lsp-bench-file-"))
    if in_repo:
        from corpus import export_repo

        spec = str(source).partition(":")[0]
        export_repo(spec, folder)
        folder = folder / spec
    path = folder / (name if in_repo else Path(name).name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return folder, path


def file_edits(line: str) -> tuple[str, ...]:
    indent = line[: len(line) - len(line.lstrip())]
    return (line + "  # edit {n}", f"{indent}_bench_value_{{n}} = {{n}}", line)


async def run_file(
    source: Path, edits: int, debounce_ms: float | None, capabilities: types.ClientCapabilities, in_repo: bool = False
) -> dict[str, object]:
    """The real-file mode: open a copy of ``source`` alone in a folder (or in its repository),
    then one-line edits inside its longest function, each followed by a code-action request
    on the edited line."""
    text = _read_source(source)
    folder, path = _place(source, text, in_repo)
    uri = path.as_uri()
    session = Session(capabilities)
    await session.start(folder, {} if debounce_ms is None else {"debounceMs": debounce_ms})
    sent = time.perf_counter()
    session.client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    first_open = await session.wait_published(uri, 1, sent)
    target_line, line = _long_function_line(text)
    variants = file_edits(line)
    latencies, actions, resolves = [], [], []
    for n in range(edits):
        version = n + 2
        change = line_change(target_line, variants[n % len(variants)].format(n=n))
        sent = time.perf_counter()
        session.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]
            )
        )
        latencies.append(await session.wait_published(uri, version, sent))
        await asyncio.sleep(0.05)
        action, resolve = await session.code_actions(uri, target_line)
        actions.append(action)
        if resolve is not None:
            resolves.append(resolve)
        await asyncio.sleep(0.2)
    await session.stop()
    result = {"lines": len(text.splitlines()), "findings": session.counts.get(uri), "first_open_ms": first_open}
    return result | summary(latencies, actions, resolves)


def core_file(source: Path, repeats: int = 15) -> dict[str, float]:
    """Medians in this process for the real file: fresh analysis, and incremental after each edit."""
    from torchtriage.analysis import analyze_source
    from torchtriage.analysis.engine import IncrementalAnalyzer

    text = _read_source(source)
    index, line = _long_function_line(text)
    lines = text.splitlines(keepends=True)
    variants = file_edits(line)
    full, edit = [], []
    analyzer = IncrementalAnalyzer(str(source))
    analyzer.analyze(text)
    for n in range(repeats):
        started = time.perf_counter()
        analyze_source(text, str(source))
        full.append((time.perf_counter() - started) * 1000)
        edited = "".join([*lines[:index], variants[n % len(variants)].format(n=n) + "\n", *lines[index + 1 :]])
        started = time.perf_counter()
        analyzer.analyze(edited)
        edit.append((time.perf_counter() - started) * 1000)
    return {"core_full_ms": statistics.median(full), "core_edit_ms": statistics.median(edit)}


async def run_notebook(edits: int, debounce_ms: float | None, capabilities: types.ClientCapabilities) -> dict[str, object]:
    """The notebook mode: open the 20-cell notebook, then edits in the training cell, each
    followed by a code-action request on that cell."""
    cells = notebook_cells()
    folder = Path(tempfile.mkdtemp(prefix="lsp-bench-"))
    notebook = folder / "train_big.ipynb"
    uris = [cell_uri(notebook, i) for i in range(len(cells))]
    train = cells.index(NOTEBOOK_TRAIN)
    session = Session(capabilities)
    await session.start(folder, {} if debounce_ms is None else {"debounceMs": debounce_ms})
    sent = time.perf_counter()
    session.client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook.as_uri(),
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=uri) for uri in uris],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text) for uri, text in zip(uris, cells)
            ],
        )
    )
    first_open = await session.wait_published(uris[-1], 1, sent)
    lines = cells[train].splitlines()
    target_line = lines.index("        total += loss.item()")
    fix_line = lines.index("        x, y = x.to(device), y.to(device)")
    latencies, actions, resolves = [], [], []
    for n in range(edits):
        version = n + 2
        change = line_change(target_line, NOTEBOOK_EDITS[n % len(NOTEBOOK_EDITS)].format(n=n))
        sent = time.perf_counter()
        session.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook.as_uri(), version=version),
                change=types.NotebookDocumentChangeEvent(
                    cells=types.NotebookDocumentCellChanges(
                        text_content=[
                            types.NotebookDocumentCellContentChanges(
                                document=types.VersionedTextDocumentIdentifier(uri=uris[train], version=version),
                                changes=[change],
                            )
                        ]
                    )
                ),
            )
        )
        latencies.append(await session.wait_published(uris[train], version, sent))
        await asyncio.sleep(0.05)
        action, resolve = await session.code_actions(uris[train], fix_line)
        actions.append(action)
        if resolve is not None:
            resolves.append(resolve)
        await asyncio.sleep(0.2)
    await session.stop()
    total_lines = sum(len(cell.splitlines()) for cell in cells)
    result = {"cells": len(cells), "lines": total_lines, "findings": sum(session.counts.get(u, 0) for u in uris)}
    return result | {"first_open_ms": first_open} | summary(latencies, actions, resolves)


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


def core_notebook(repeats: int = 15) -> dict[str, float]:
    """Medians in this process: a fresh analysis of the notebook's cells, and (where the core has
    one) an incremental one after each bench edit in the training cell."""
    from torchtriage.analysis.notebooks import analyze_cells

    try:
        from torchtriage.analysis.notebooks import NotebookAnalyzer
    except ImportError:  # before notebooks were analysed incrementally
        NotebookAnalyzer = None  # type: ignore[assignment,misc]  # noqa: N806
    cells = notebook_cells()
    train = cells.index(NOTEBOOK_TRAIN)
    line = "        total += loss.item()\n"
    full, edit = [], []
    analyzer = NotebookAnalyzer("/tmp/train_big.ipynb") if NotebookAnalyzer else None
    if analyzer is not None:
        analyzer.analyze(cells)
    for n in range(repeats):
        started = time.perf_counter()
        analyze_cells(cells, "/tmp/train_big.ipynb")
        full.append((time.perf_counter() - started) * 1000)
        if analyzer is not None:
            edited = list(cells)
            edited[train] = cells[train].replace(line, NOTEBOOK_EDITS[n % len(NOTEBOOK_EDITS)].format(n=n) + "\n")
            started = time.perf_counter()
            analyzer.analyze(edited)
            edit.append((time.perf_counter() - started) * 1000)
    return {"core_full_ms": statistics.median(full), "core_edit_ms": statistics.median(edit) if edit else float("nan")}


def _stamp(mode: str) -> str:
    return f"| {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} | {mode} |"


def _ms(value: object) -> str:
    return "-" if value is None or value != value else f"{value:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", action="store_true", help="a 20-cell notebook instead of the 1,000-line file")
    parser.add_argument("--file", type=Path, help="bench this real file (e.g. timm's train.py) instead")
    parser.add_argument("--in-repo", action="store_true", help="with --file owner+name:path: open it inside its repository")
    parser.add_argument("--edits", type=int, default=60)
    parser.add_argument("--client", choices=("resolve", "eager"), default="resolve", help="declare codeAction resolveSupport or not")
    parser.add_argument("--debounce-ms", type=float, help="fixed debounce (default: the server's adaptive one)")
    parser.add_argument("--out", type=Path, help="append the Markdown rows here")
    args = parser.parse_args()
    capabilities = RESOLVING if args.client == "resolve" else types.ClientCapabilities()
    mode = "idle: none, busy: 20 ms" if args.debounce_ms is None else f"{args.debounce_ms:g} ms"
    if args.notebook:
        runs = [_notebook_rows(args, capabilities, mode)]
    elif args.file is not None:
        runs = [_file_rows(args.file, args, capabilities, mode)]
    else:  # the standard run: the generated file, then the real long-function file
        runs = [_file_rows(None, args, capabilities, mode)]
        if _real_file_available():
            runs.append(_file_rows(Path(REAL_FILE), args, capabilities, mode))
    for result, edits_row, actions_row in runs:
        print(result)
        print(edits_row)
        print(actions_row)
        if args.out:
            with args.out.open("a", encoding="utf-8") as handle:
                handle.write(edits_row + "\n" + actions_row + "\n")


def _notebook_rows(args: argparse.Namespace, capabilities: types.ClientCapabilities, mode: str) -> tuple[dict, str, str]:
    result = asyncio.run(run_notebook(args.edits, args.debounce_ms, capabilities))
    result.update(core_notebook())
    edits_row = (
        f"{_stamp(mode)} {result['cells']} | {result['lines']} | {result['findings']} | {result['first_open_ms']:.0f} | "
        f"{result['edit_p50_ms']:.0f} | {result['edit_p95_ms']:.0f} | {result['edit_max_ms']:.0f} | "
        f"{result['core_full_ms']:.0f} | {_ms(result['core_edit_ms'])} | {result['edits']} |"
    )
    return result, edits_row, _actions_row(result, args, "notebook")


def _file_rows(
    source: Path | None, args: argparse.Namespace, capabilities: types.ClientCapabilities, mode: str
) -> tuple[dict, str, str]:
    """One file-mode run: the generated 1,000-line file (``source`` None) or a real file."""
    if source is not None:
        result = asyncio.run(run_file(source, args.edits, args.debounce_ms, capabilities, args.in_repo))
        result.update(core_file(source))
    else:
        result = asyncio.run(run(args.edits, args.debounce_ms, capabilities))
        result.update(core_analysis())
    edits_row = (
        f"{_stamp(mode)} {result['lines']} | {result['findings']} | {result['first_open_ms']:.0f} | "
        f"{result['edit_p50_ms']:.0f} | {result['edit_p95_ms']:.0f} | {result['edit_max_ms']:.0f} | "
        f"{result['core_full_ms']:.0f} | {result['core_edit_ms']:.0f} | "
        f"{result['edit_p50_ms'] - result['core_edit_ms']:.0f} | {result['edits']} |"
    )
    return result, edits_row, _actions_row(result, args, "file")


def _actions_row(result: dict, args: argparse.Namespace, kind: str) -> str:
    return (
        f"{_stamp(kind)} {args.client} | {result['action_p50_ms']:.0f} | "
        f"{result['action_p95_ms']:.0f} | {_ms(result['resolve_p50_ms'])} | {_ms(result['resolve_p95_ms'])} | {result['edits']} |"
    )


if __name__ == "__main__":
    print(f"python {platform.python_version()}", file=sys.stderr)
    main()
