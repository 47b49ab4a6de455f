"""Shared by the incremental-parsing tests and the language server's long-function test: the
node-for-node comparison with a full parse, and an ~800-line ``main()`` to edit."""

from __future__ import annotations

import ast

from torchtriage.analysis.incremental.reparse import ParsedModule
from torchtriage.findings import Finding




def _shape(parsed: ParsedModule) -> tuple[object, ...]:
    """Everything that must match a full parse: the tree with positions, walk order and parents."""
    index = {id(node): i for i, node in enumerate(parsed.nodes)}
    parents = sorted((index[id(child)], index[id(parent)]) for child, parent in parsed.parents.items())
    order = [
        (type(node).__name__, getattr(node, "lineno", None), getattr(node, "col_offset", None),
         getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None))
        for node in parsed.nodes
    ]
    # The per-type indexes rules read (carried from version to version, see ParsedModule).
    by_type = [[index[id(node)] for node in parsed.nodes_of(types)] for types in TYPE_KEYS]
    return ast.dump(parsed.tree, include_attributes=True), order, parents, by_type


TYPE_KEYS = (
    ast.Call, ast.ClassDef, ast.Assign, (ast.FunctionDef, ast.AsyncFunctionDef), (ast.For, ast.AsyncFor, ast.While),
    (ast.Import, ast.ImportFrom), (ast.Call, ast.Assign), (ast.Call, ast.FunctionDef, ast.AsyncFunctionDef), ast.Name,
)


def _same(incremental: ParsedModule | Finding, full: ParsedModule | Finding) -> None:
    if isinstance(full, Finding):
        assert isinstance(incremental, Finding) and incremental == full
    else:
        assert isinstance(incremental, ParsedModule)
        assert _shape(incremental) == _shape(full)





SECTION = '''\
    # --- section {i} ---
    parser.add_argument("--opt{i}", default={i}, type=int)
    value{i} = args.opt{i} * {i} if {i} % 3 else None
    if value{i} is not None and value{i} > 2:
        log(f"value {i}: {{value{i}}}")
    elif args.verbose:
        log("small {i}"); count += 1
    else:
        pass
    try:
        table{i} = load_table(
            "table_{i}.csv",
            columns=["a", "b"],
        )
    except (OSError, ValueError) as error:
        table{i} = None
        log(str(error))
    finally:
        count += 1
    with open("notes_{i}.txt") as handle:
        notes = handle.read()
        total = count + \\
            {i}
    match args.mode:
        case "fast":
            speed = {i}
        case _:
            speed = 0

    @register("hook{i}")
    def hook{i}(x):
        """Hook {i}: a docstring
with a line at column 0."""
        return x + {i}
'''


TRAIN = '''\
    device = torch.device("cpu")
    model = torch.nn.Linear(8, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=32)
    for epoch in range(args.epochs):
        start = time.time()
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            if (step + 1) % 4 == 0:
                optimizer.step()
                optimizer.zero_grad()
            total = loss.item()
        print(epoch, time.time() - start)
'''


def long_function_file(sections: int = 24) -> str:
    """About 800 lines, almost all in one ``main()``."""
    body = "".join(SECTION.format(i=i) for i in range(sections))
    return (
        "import argparse\nimport time\nimport torch\nfrom torch.utils.data import DataLoader\n\n\n"
        "def log(message):\n    print(message)\n\n\n"
        "def main():\n    parser = argparse.ArgumentParser()\n    args = parser.parse_args()\n    count = 0\n"
        + body + TRAIN + "\n\nif __name__ == '__main__':\n    main()\n"
    )
