"""Columns: the core counts characters (1-based, end exclusive), LSP counts code units.

LSP positions are 0-based lines and, by default, UTF-16 code units; a client
may negotiate UTF-8 or UTF-32 instead.  :class:`Positions` converts both ways
for one text, so a line with an emoji or CJK text still gets the right range.
"""

from __future__ import annotations

from lsprotocol import types

from ..analysis.text import split_lines
from ..findings import Span


def _units(text: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf32 or text.isascii():
        return len(text)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


class Positions:
    """Char columns <-> client code units for one text (defaults to UTF-16)."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16) -> None:
        self.lines = split_lines(text)
        self.encoding = str(encoding)

    def _line(self, index: int) -> str:
        return self.lines[index] if 0 <= index < len(self.lines) else ""

    def to_position(self, line: int, column: int) -> types.Position:
        """1-based line and character column -> LSP position."""
        text = self._line(line - 1)
        return types.Position(line=max(line - 1, 0), character=_units(text[: max(column - 1, 0)], self.encoding))

    def to_range(self, span: Span) -> types.Range:
        return types.Range(
            start=self.to_position(span.line, span.column),
            end=self.to_position(span.end_line, span.end_column),
        )

    def to_column(self, position: types.Position) -> int:
        """LSP position -> 1-based character column on its line."""
        text = self._line(position.line)
        if self.encoding == types.PositionEncodingKind.Utf32 or text.isascii():
            return min(position.character, len(text)) + 1
        units = 0
        for index, char in enumerate(text):
            if units >= position.character:
                return index + 1
            units += _units(char, self.encoding)
        return len(text) + 1

    def to_span(self, range_: types.Range) -> Span:
        return Span(
            range_.start.line + 1,
            self.to_column(range_.start),
            range_.end.line + 1,
            self.to_column(range_.end),
        )

    def line_end(self, line: int) -> types.Position:
        """The end of a 1-based line."""
        text = self._line(line - 1)
        return types.Position(line=line - 1, character=_units(text, self.encoding))
