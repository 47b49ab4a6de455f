"""Reading a chrome trace one event at a time: plain or gzip-compressed JSON, never the whole file at once.

``read_trace(path)`` returns the top-level keys written before ``traceEvents``
(kineto writes ``deviceProperties``, ``distributedInfo``, ``with_stack``... there)
and an iterator over the events; keys written after the list join the same dict
once the iterator is exhausted.  A trace in the JSON-array format (a bare list of
events) has no header.  The parser is the standard library's: ``json``'s C
scanner decodes one event at a time from a buffer refilled in chunks
(``JSONDecoder.raw_decode``), which measured as fast as ijson's C backend here
(about 75 MB/s on kineto's indented output) and needs no dependency.
Anything that is not such a trace raises ``TraceError`` with a one-line message.

``read_events(path)`` is the analysis's faster form: the same header, and the
events as ``TraceEvent`` structs (``trace_event``).  It cuts the buffered text
after the last whole event it holds (a ``}`` followed by ``,`` and ``{``, or by
the list's ``]``) and decodes the run with msgspec; a run that does not decode
(an unusual layout, a brace inside a string, a damaged file) is read event by
event as above, which also words the error.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from pathlib import Path
from typing import Any, Iterator, Optional, TextIO

from .trace_event import FAST, TraceEvent, decode_events, from_dict

CHUNK = 1 << 20  # characters read at a time
RUN_CHARS = 1 << 18  # characters of whole events decoded at once by ``read_events``
CUT_TRIES = 4  # candidate ends of a run tried before reading one event the slow way
MAX_VALUE = 64 << 20  # one JSON value longer than this (unparsed) is taken as corruption, not a long event
_SPACE = " \t\n\r"
_GZIP_MAGIC = b"\x1f\x8b"


class TraceError(ValueError):
    """The file is not a trace this reader can use; the message is one line, fit to show as it is."""


def _open(path: Path) -> TextIO:
    try:
        with open(path, "rb") as handle:
            magic = handle.read(2)
        if magic == _GZIP_MAGIC:
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
        return open(path, encoding="utf-8", errors="replace")
    except IsADirectoryError:
        raise TraceError(f"{path}: is a folder, not a trace file") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read it ({exc.strerror or exc})") from None


class _Scanner:
    """A window on the text: values are decoded from it with the C scanner, and it is refilled as they are used."""

    def __init__(self, handle: TextIO, path: Path) -> None:
        self.handle = handle
        self.path = path
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # characters dropped from the front of the window
        self._decode = json.JSONDecoder().raw_decode

    def _fill(self, size: int = CHUNK) -> bool:
        """Read more text; False at the end of the file."""
        if self.eof:
            return False
        try:
            more = self.handle.read(size)
        except EOFError:
            raise TraceError(f"{self.path}: the gzip stream ends early: the file is cut off (was it still being written?)") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise TraceError(f"{self.path}: corrupt gzip data ({exc})") from None
        except OSError as exc:
            raise TraceError(f"{self.path}: cannot read it ({exc})") from None
        if not more:
            self.eof = True
            return False
        self.consumed += self.pos
        self.buf = self.buf[self.pos:] + more
        self.pos = 0
        return True

    def buffer_at_least(self, chars: int) -> None:
        """Read on until ``chars`` characters are buffered past the position, or the file ends."""
        while len(self.buf) - self.pos < chars and self._fill():
            pass

    def peek(self, skip: str = _SPACE) -> str:
        """The next character that is not in ``skip`` ('' at the end of the file), left unread."""
        while True:
            buf, pos = self.buf, self.pos
            n = len(buf)
            while pos < n and buf[pos] in skip:
                pos += 1
            self.pos = pos
            if pos < n:
                return buf[pos]
            if not self._fill():
                return ""

    def take(self, char: str) -> None:
        if self.peek() != char:
            self.fail(f"expected {char!r}")
        self.pos += 1

    def value(self) -> Any:
        """Decode the next JSON value."""
        self.peek()
        size = CHUNK
        while True:
            try:
                value, end = self._decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos > MAX_VALUE or not self._fill(size):
                    self.fail(exc.msg.lower(), exc.pos, exc.msg.startswith("Unterminated"))
                size *= 2
                continue
            if end == len(self.buf) and not self.eof and self._fill(size):
                continue  # a number or literal may go on in the next chunk: decode it again whole
            self.pos = end
            return value

    def fail(self, what: str, at: Optional[int] = None, open_ended: bool = False) -> None:
        """Raise ``TraceError``: the file is cut off when the text ran out inside a value, else not valid JSON."""
        at = self.pos if at is None else at
        if self.eof and (open_ended or at >= len(self.buf.rstrip())):
            raise TraceError(f"{self.path}: the JSON ends early (after {self.consumed + at} characters): the file is cut off")
        raise TraceError(f"{self.path}: not valid JSON at character {self.consumed + at} ({what}): not a chrome trace, or a damaged one")


def read_trace(path: Path) -> tuple[dict[str, Any], Iterator[Any]]:
    """The trace's top-level keys before ``traceEvents``, and an iterator over its events (see the module doc)."""
    scanner, header, in_object = _start(Path(path))
    return header, _events(scanner, header, in_object)


def read_header(path: Path) -> dict[str, Any]:
    """Only the top-level keys before ``traceEvents`` (cheap: kineto writes the event list last but one)."""
    scanner, header, _ = _start(Path(path))
    scanner.handle.close()
    return header


def _start(path: Path) -> tuple[_Scanner, dict[str, Any], bool]:
    """Read up to the first event: the scanner, the header, and whether the events are inside an object."""
    handle = _open(path)
    scanner = _Scanner(handle, path)
    header: dict[str, Any] = {}
    try:
        first = scanner.peek()
        if first == "[":
            scanner.pos += 1
            return scanner, header, False
        if not first:
            raise TraceError(f"{path}: the file is empty")
        if first != "{":
            scanner.fail("a trace is a JSON object or list")
        scanner.pos += 1
        while True:
            key = _next_key(scanner)
            if key is None:
                break
            if key == "traceEvents":
                if scanner.peek() != "[":
                    raise TraceError(f"{path}: traceEvents is not a list: not a chrome trace from torch.profiler")
                scanner.pos += 1
                return scanner, header, True
            header[key] = scanner.value()
    except BaseException:
        handle.close()
        raise
    handle.close()
    raise TraceError(f"{path}: has no traceEvents list: not a chrome trace from torch.profiler")


def _next_key(scanner: _Scanner) -> Optional[str]:
    """The next key of the top-level object, with its ':' read; None at its end."""
    char = scanner.peek(_SPACE + ",")
    if char == "}":
        scanner.pos += 1
        return None
    if char != '"':
        scanner.fail("expected a key")
    key = scanner.value()
    scanner.take(":")
    return str(key)


def _events(scanner: _Scanner, header: dict[str, Any], in_object: bool) -> Iterator[Any]:
    try:
        while True:
            char = scanner.peek(_SPACE + ",")
            if char == "]":
                scanner.pos += 1
                break
            if not char:
                scanner.fail("the event list is not closed")
            yield scanner.value()
        if in_object:  # keys after the list (kineto writes traceName there)
            while True:
                key = _next_key(scanner)
                if key is None:
                    break
                header.setdefault(key, scanner.value())
    finally:
        scanner.handle.close()


def read_events(path: Path) -> tuple[dict[str, Any], Iterator[Any]]:
    """``read_trace`` for the analysis: the header, and the events as ``TraceEvent`` structs (see the module doc);
    a value in the list that is not an object comes as it is, for the caller to count as skipped."""
    scanner, header, in_object = _start(Path(path))
    return header, _fast_events(scanner, header, in_object)


def _fast_events(scanner: _Scanner, header: dict[str, Any], in_object: bool) -> Iterator[Any]:
    slow = _events(scanner, header, in_object)
    try:
        while FAST:
            char = scanner.peek(_SPACE + ",")
            if char != "{":
                break  # the list's end, or something the slow reader words
            scanner.buffer_at_least(RUN_CHARS)
            run = _whole_events(scanner)
            if run is not None:
                yield from run
                continue
            # the run did not decode: read what it held event by event (which words any error), then try again
            until = scanner.consumed + scanner.pos + RUN_CHARS
            while scanner.consumed + scanner.pos < until and scanner.peek(_SPACE + ",") == "{":
                event = from_dict(next(slow))
                if event is not None:
                    yield event
        for value in slow:
            event = from_dict(value)
            yield event if event is not None else value
    finally:
        scanner.handle.close()


def _whole_events(scanner: _Scanner) -> Optional[list[TraceEvent]]:
    """Decode the buffered whole events from the scanner's position and move past them (None: could not)."""
    buf, pos = scanner.buf, scanner.pos
    end = len(buf)
    for _ in range(CUT_TRIES):
        cut = buf.rfind("}", pos, end)
        if cut < 0:
            return None
        end = cut
        after = cut + 1
        while after < len(buf) and buf[after] in _SPACE:
            after += 1
        if after >= len(buf) or buf[after] not in ",]":
            continue
        if buf[after] == ",":
            follow = after + 1
            while follow < len(buf) and buf[follow] in _SPACE:
                follow += 1
            if follow >= len(buf) or buf[follow] != "{":
                continue
        events = decode_events("[" + buf[pos:cut + 1] + "]")
        if events is not None:
            scanner.pos = cut + 1
            return events
    return None
