"""The per-step code kept from the previous version of a file is exactly a fresh pass's.

:mod:`torchtriage.analysis.hotloops.reuse` keeps the marked regions across edits that did
not touch them.  Each edit below changes something the marking reads outside the
regions it marked (a function, class, instance, lambda, loader variable or modulo
helper of the file, the parameters around the step loop, the imports, the lines
above a call path from another file) or leaves all of it alone; after each, the
incremental analyzer's hot loops must match a fresh parse's region for region and
node for node, positions included.
"""

from __future__ import annotations

import ast
import random

from torchtriage.analysis.context import ModuleContext
from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.hotloops.regions import HotEntry, HotLoops
from torchtriage.analysis.incremental.reparse import ParsedModule, parse_module

SOURCE = '''\
import torch
import sys as system
from torch.utils.data import DataLoader

LIMIT = 10


def multiple(n, k):
    return n % k == 0


def describe():
    return "a helper no step calls"


def helper(x):
    return x.cpu()


def per_step_entry(batch):
    moved = helper(batch)
    return moved.sum().item()


class Stepper:
    def step(self, batch):
        out = self.model(batch)
        return out.sum().item()


def train_one_epoch(model, loader, optimizer, stepper):
    to_np = lambda t: t.detach().cpu().numpy()
    for step, batch in enumerate(loader):
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        value = stepper.step(batch)
        arr = to_np(loss)
        if multiple(step, LIMIT):
            print(loss.item())
        if not torch.isfinite(loss):
            print("diverged", loss.item())
            system.exit(1)


def main():
    loader = DataLoader(range(10), batch_size=2)
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    stepper = Stepper()
    for epoch in range(3):
        train_one_epoch(model, loader, optimizer, stepper)
    print("done")
'''

# Each edit changes one thing the marking reads (the comment says which), re-parsed inside
# one function where it can be, so that only that check can tell the kept result is stale.
EDITS = [
    # nothing the marking reads: the kept result is reused
    ('    print("done")\n', '    print("done", epoch)\n'),
    ("    model = torch.nn.Linear(2, 2)\n", "    model = torch.nn.Linear(2, 4)\n    extra = 1\n"),
    # a region's subtree (its root's token)
    ("        arr = to_np(loss)\n", "        arr = to_np(loss)\n        total = loss.item()\n"),
    ("    moved = helper(batch)\n", "    moved = helper(batch)\n    moved.item()\n"),
    # lines above the call path from another file (``engine.py:12 -> train.py:<line>``)
    ('    return "a helper no step calls"\n', '    """What this is."""\n    return "a helper no step calls"\n'),
    # the functions, classes, instances and lambdas of the file
    ('    print("done")\n', '    print("done")\n\n    def helper(x):\n        return x.item()\n'),
    ('    print("done")\n', '    print("done")\n\n    class Stepper:\n        pass\n'),
    ("    stepper = Stepper()\n", "    stepper = make_stepper()\n"),
    ('    print("done")\n', '    print("done")\n    to_np = lambda t: t.item()\n'),
    # the modulo helper (also a region: the guard calls it per step), the imports
    # (``system.exit`` ends the run), a new step loop
    ("    return n % k == 0\n", "    return n > k\n"),
    ("import sys as system\n", "import os as system\n"),
    ('    print("done")\n', '    print("done")\n    for batch in loader:\n        model(batch).sum().backward()\n'),
]


def _position(node: ast.AST | None) -> tuple[object, ...] | None:
    if node is None:
        return None
    return (type(node).__name__, getattr(node, "lineno", None), getattr(node, "col_offset", None),
            getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None))


def hot_shape(hot: HotLoops) -> tuple[object, ...]:
    """Everything a rule can read from the hot loops, by position instead of node identity."""
    regions = [
        (r.kind, _position(r.node), sorted(r.batch_names), sorted(r.counter_names), r.trains, _position(r.via), r.hot_path)
        for r in hot.regions
    ]
    per_step = sorted((_position(node), _position(region.node)) for node, region in hot.per_step.items())  # type: ignore[type-var]
    return (
        regions, per_step, [_position(n) for n in hot.epoch_loops],
        sorted(map(_position, hot.accumulation_guards)), sorted(map(_position, hot.rare_guards)),  # type: ignore[type-var]
    )


def _entries(parsed: ParsedModule) -> tuple[HotEntry, ...]:
    """``per_step_entry`` as another file's per-step call would make it hot."""
    found = [n for n in parsed.nodes_of(ast.FunctionDef) if n.name == "per_step_entry"]  # type: ignore[attr-defined]
    return tuple(HotEntry(func, frozenset({"batch"}), ("engine.py:12",)) for func in found)  # type: ignore[arg-type]


def _hot(parsed: ParsedModule) -> HotLoops:
    ctx = ModuleContext(source=parsed.source, tree=parsed.tree, path="train.py", parsed=parsed, hot_entries=_entries(parsed))
    return ctx.hot


def _fresh(text: str) -> HotLoops:
    parsed = parse_module(text, "train.py")
    assert isinstance(parsed, ParsedModule)
    return _hot(parsed)


def test_kept_hot_loops_match_a_fresh_pass_after_each_kind_of_edit() -> None:
    analyzer = IncrementalAnalyzer("train.py")
    text = SOURCE
    previous = _hot(analyzer.parse(text))  # type: ignore[arg-type]
    reused = changed = 0
    for old, new in [step for old, new in EDITS for step in ((old, new), (new, old))]:  # each edit, then undone
        assert old in text, old
        before = hot_shape(previous)
        text = text.replace(old, new, 1)
        parsed = analyzer.parse(text)
        assert isinstance(parsed, ParsedModule)
        hot = _hot(parsed)
        assert hot_shape(hot) == hot_shape(_fresh(text)), (old, new)
        reused += hot is previous
        changed += hot_shape(hot) != before
        previous = hot
    assert reused >= 4, "edits in main() should reuse the kept result"
    assert changed >= 14, "the edits should change the per-step code"


def test_kept_hot_loops_match_a_fresh_pass_over_random_edits() -> None:
    rng = random.Random("hot-reuse")
    analyzer = IncrementalAnalyzer("train.py")
    text = SOURCE
    for _ in range(120):
        lines = text.split("\n")
        at = rng.randrange(len(lines))
        roll = rng.random()
        if roll < 0.4:
            old, new = rng.choice(EDITS)
            text = text.replace(old, new, 1) if old in text else text.replace(new, old, 1)
        elif roll < 0.7:
            indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
            lines.insert(at, indent + rng.choice(["x = 1", "print(loss.item())", "# note", "loss.backward()", "pass"]))
            text = "\n".join(lines)
        else:
            del lines[at]
            text = "\n".join(lines)
        parsed = analyzer.parse(text)
        if not isinstance(parsed, ParsedModule):
            continue  # a syntax error: the last good version stays the base
        assert hot_shape(_hot(parsed)) == hot_shape(_fresh(text))
