"""Report anchors that are shorter than the statements they stand for."""

from __future__ import annotations

import ast


def loop_header(loop: ast.For | ast.AsyncFor | ast.While) -> ast.AST:
    """A node spanning ``for target in iterable`` (or ``while test``): the loop's first line, not its body."""
    end = loop.iter if isinstance(loop, (ast.For, ast.AsyncFor)) else loop.test
    node = ast.Pass()
    node.lineno, node.col_offset = loop.lineno, loop.col_offset
    node.end_lineno, node.end_col_offset = end.end_lineno, end.end_col_offset
    return node
