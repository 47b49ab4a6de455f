"""Results kept on ast nodes (``analysis/incremental/memo.py``): computed once, kept per key and slot,
dropped by ``forget``, and carried by the statements an incremental re-parse keeps."""

from __future__ import annotations

import ast

from torchtriage.analysis.incremental.memo import forget, keyed_memo, subtree_memo
from torchtriage.analysis.incremental.reparse import parse_module, reparse


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return self.calls


def test_a_subtree_result_is_computed_once_per_node_and_key() -> None:
    node = ast.parse("x = 1").body[0]
    compute = Counter()
    assert subtree_memo(node, "test-a", compute) == 1
    assert subtree_memo(node, "test-a", compute) == 1
    assert compute.calls == 1
    assert subtree_memo(node, "test-b", compute) == 2  # another key is another result
    other = ast.parse("x = 1").body[0]
    assert subtree_memo(other, "test-a", compute) == 3  # an equal but distinct node keeps its own


def test_forget_drops_every_kept_result_and_only_those() -> None:
    node = ast.parse("x = 1").body[0]
    compute = Counter()
    subtree_memo(node, "test-forget", compute)
    keyed_memo(node, "test-forget-slot", ("k",), compute)
    forget(node)
    assert subtree_memo(node, "test-forget", compute) == 3
    assert keyed_memo(node, "test-forget-slot", ("k",), compute) == 4
    assert isinstance(node, ast.Assign) and node.targets[0].id == "x"  # the node itself is untouched


def test_a_keyed_result_is_replaced_when_its_key_changes() -> None:
    node = ast.parse("f(a)").body[0]
    compute = Counter()
    assert keyed_memo(node, "test-slot", (("np", "numpy"),), compute) == 1
    assert keyed_memo(node, "test-slot", (("np", "numpy"),), compute) == 1  # equal key: kept
    assert keyed_memo(node, "test-slot", (("np", "jax.numpy"),), compute) == 2  # new key: recomputed
    assert keyed_memo(node, "test-slot", (("np", "numpy"),), compute) == 3  # one value per slot, not per key
    assert compute.calls == 3


def test_results_survive_on_untouched_statements_and_are_forgotten_on_the_edited_ones() -> None:
    before = "import torch\n\ndef f(x):\n    return x.item()\n\ndef g(y):\n    return y\n"
    first = parse_module(before, "m.py")
    kept_function, replaced_function = first.tree.body[1], first.tree.body[2]
    compute = Counter()
    subtree_memo(kept_function, "test-reparse", compute)
    subtree_memo(replaced_function, "test-reparse", compute)
    old_return = replaced_function.body[0]
    after = before.replace("return y", "return y + 1")
    second = reparse(first, after, "m.py")
    assert second.tree.body[1] is kept_function  # f was not touched by the edit
    assert subtree_memo(second.tree.body[1], "test-reparse", compute) == 1
    # g holds the edit: it stays the same object with a new body, and what was kept on it is forgotten
    assert second.tree.body[2] is replaced_function and replaced_function.body[0] is not old_return
    assert subtree_memo(second.tree.body[2], "test-reparse", compute) == 3
