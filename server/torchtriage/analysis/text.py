"""Line and offset arithmetic that agrees with how Python's parser counts lines."""

from __future__ import annotations

import re

from ..findings import Span

_NEWLINE = re.compile(r"\r\n|\r|\n")


def split_lines(source: str, keepends: bool = False) -> list[str]:
    """Split on the newlines Python itself recognises (not form feeds or U+2028)."""
    if not source:
        return []
    if "\r" not in source:  # the common case, at C speed
        pieces = source.split("\n")
        last = [pieces[-1]] if pieces[-1] else []
        return [piece + "\n" for piece in pieces[:-1]] + last if keepends else pieces[:-1] + last
    parts: list[str] = []
    start = 0
    for match in _NEWLINE.finditer(source):
        parts.append(source[start : match.end() if keepends else match.start()])
        start = match.end()
    if start < len(source):
        parts.append(source[start:])
    return parts


def line_offsets(source: str) -> list[int]:
    """Offset of the start of each line (index 0 is line 1), plus one past the end."""
    offsets = [0]
    if "\r" not in source:
        for line in source.split("\n")[:-1]:
            offsets.append(offsets[-1] + len(line) + 1)
        if offsets[-1] != len(source) or not offsets[1:]:
            offsets.append(len(source))
        return offsets
    for match in _NEWLINE.finditer(source):
        offsets.append(match.end())
    if offsets[-1] != len(source) or not offsets[1:]:
        offsets.append(len(source))
    return offsets


def offset_of(offsets: list[int], line: int, column: int) -> int:
    """String offset for a 1-based line and 1-based character column."""
    if line - 1 >= len(offsets):
        return offsets[-1]
    return offsets[line - 1] + column - 1


def span_offsets(offsets: list[int], span: Span) -> tuple[int, int]:
    return offset_of(offsets, span.line, span.column), offset_of(offsets, span.end_line, span.end_column)


def indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]
