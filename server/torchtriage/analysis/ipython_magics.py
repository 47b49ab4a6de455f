"""IPython syntax neutralised without moving lines: magics, shell escapes, help.

A notebook cell is IPython, not Python.  Before analysis each such line is
replaced by plain Python (``pass`` at the line's indentation, ``x = None`` for
``x = !ls``, blank for ``%%bash`` cells), so every other line keeps its number
and columns.  Lines that only *look* like IPython because they sit inside a
string or a bracketed expression (``% b`` continuing a modulo) are left alone:
candidates are confirmed with the tokenizer.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

from .text import indentation, split_lines

# Cell magics whose body is Python: the body is analysed, the magic line blanked.
PYTHON_CELL_MAGICS = frozenset(
    {"time", "timeit", "capture", "torchtriage", "prun", "debug", "memit", "mprun", "px"}
)

_LINE_MAGIC = re.compile(r"^(?P<indent>[ \t]*)(?:%|!)")
_ASSIGNED_MAGIC = re.compile(r"^(?P<lhs>[ \t]*[A-Za-z_][\w, \t.\[\]]*?[ \t]*=[ \t]*)(?:%|!)")
_HELP = re.compile(r"^[ \t]*(?:\?{1,2}[ \t]*[A-Za-z_][\w.]*|[A-Za-z_][\w.]*[ \t]*\?{1,2})[ \t]*$")
_CELL_MAGIC = re.compile(r"^%%(?P<name>\w+)")
_MAGIC_CHARS = re.compile(r"[%!?]")
_NOT_CODE = (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT, tokenize.ENDMARKER)


@dataclass(frozen=True)
class NeutralisedCell:
    """A cell's Python text (same line count as the original) and the lines changed."""

    text: str
    changed_lines: frozenset[int]  # 1-based, cell-local


def _replacement(line: str) -> str | None:
    """Python for an IPython-only line, or None when the line is not IPython syntax."""
    stripped = line.lstrip()
    assigned = _ASSIGNED_MAGIC.match(line)
    if assigned and not stripped.startswith(("%", "!")):
        return assigned.group("lhs").rstrip() + " None"
    if _LINE_MAGIC.match(line) or _HELP.match(line):
        return f"{indentation(line)}pass"
    return None


def _statement_starts(text: str) -> tuple[set[int], int]:
    """Lines on which a statement begins, and the last line the tokenizer vouched for."""
    starts: set[int] = set()
    expect_start = True
    last_line = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            last_line = max(last_line, token.end[0]) if token.type != tokenize.ENDMARKER else last_line
            if token.type == tokenize.NEWLINE:  # NL (blank line, inside brackets) does not end one
                expect_start = True
            elif token.type not in _NOT_CODE:
                if expect_start:
                    starts.add(token.start[0])
                expect_start = False
    except (tokenize.TokenError, SyntaxError):
        pass  # partial code: lines past ``last_line`` are judged without the tokenizer
    return starts, last_line


def neutralise_cell(source: str) -> NeutralisedCell:
    """Replace IPython-only syntax in one cell; line count and other lines unchanged."""
    lines = split_lines(source, keepends=True)
    bodies = [line.rstrip("\r\n") for line in lines]
    endings = [line[len(body) :] for line, body in zip(lines, bodies)]
    changed: set[int] = set()
    first = next((i for i, body in enumerate(bodies) if body.strip()), None)
    if first is not None and (magic := _CELL_MAGIC.match(bodies[first].lstrip())):
        python_body = magic.group("name") in PYTHON_CELL_MAGICS
        for index in range(first, first + 1 if python_body else len(bodies)):
            if bodies[index]:
                bodies[index] = ""
                changed.add(index + 1)
        if not python_body:
            return _join(bodies, endings, changed)
    candidates = {
        index: replacement
        for index, body in enumerate(bodies)
        if index + 1 not in changed and (replacement := _replacement(body)) is not None
    }
    if candidates:
        # Tokenize with the IPython characters made harmless but brackets kept.
        tentative = [
            _MAGIC_CHARS.sub("_", body) if index in candidates else body for index, body in enumerate(bodies)
        ]
        starts, vouched = _statement_starts(_join(tentative, endings, set()).text)
        for index, replacement in candidates.items():
            # Not a statement start: the line continues a string or a bracketed expression.
            if index + 1 in starts or index + 1 > vouched:
                bodies[index] = replacement
                changed.add(index + 1)
    return _join(bodies, endings, changed)


def _join(bodies: list[str], endings: list[str], changed: set[int]) -> NeutralisedCell:
    return NeutralisedCell("".join(b + e for b, e in zip(bodies, endings)), frozenset(changed))
