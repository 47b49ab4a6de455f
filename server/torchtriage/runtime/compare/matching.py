"""Which line of run A is which line of run B, across edits: hot lines and static findings.

Both reports keep the text of their files (report.json ``sources``, new in
1.2).  A line diff of the two texts (whitespace-stripped lines, so re-indented
code still matches) maps every line: ``same`` (same text, same number),
``moved`` (same text, another number: code was inserted or removed above),
``changed`` (the line was edited in place), or gone.  A line deleted in one
place and inserted unchanged in another is ``moved`` too.  Reports without
the texts (schema 1.1) are matched by each hot line's own text and function,
nearest line first (``content``).  A file neither run has the text of (traces
analysed without their source) is matched by line number, the same file
(same path or file name) on both sides: ``same``, and the comparison's
warnings say so (``Matcher.number_warnings``).  What cannot be told is
``unmatched``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAME, MOVED, CHANGED = "same", "moved", "changed"
REMOVED, ADDED, CONTENT, UNMATCHED = "removed", "added", "content", "unmatched"
FINDING_SLACK = 2  # a finding of the same code this many lines from where the old one went is the same finding
MIN_PAIRING_TEXT = 6  # shorter lines (`pass`, `)`) are too common to pair by their text alone


@dataclass(frozen=True)
class LineMap:
    """Where each 1-based line of A's file is in B's (with how), and back."""

    to_b: dict[int, tuple[int, str]]
    to_a: dict[int, tuple[int, str]]

    def expected_b(self, a_line: int) -> int:
        """B's line for an A line: its own when it maps, else the nearest mapped line above it plus the offset."""
        if a_line in self.to_b:
            return self.to_b[a_line][0]
        above = [line for line in self.to_b if line < a_line]
        if not above:
            return a_line
        nearest = max(above)
        return self.to_b[nearest][0] + (a_line - nearest)


def _stripped(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def diff_texts(a_text: str, b_text: str) -> LineMap:
    """The line map of two versions of one file."""
    a, b = _stripped(a_text), _stripped(b_text)
    to_b: dict[int, tuple[int, str]] = {}
    deleted: list[int] = []
    inserted: list[int] = []

    def pair(i: int, j: int, kind: str) -> None:
        to_b[i + 1] = (j + 1, kind)

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                pair(i1 + k, j1 + k, SAME if i1 + k == j1 + k else MOVED)
            continue
        common = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(common):
            pair(i1 + k, j1 + k, CHANGED)
        deleted += range(i1 + common, i2)
        inserted += range(j1 + common, j2)
    # A line deleted here and inserted unchanged there moved (only when its text is unique on both sides).
    for text, (i, j) in _unique_pairs(deleted, inserted, a, b).items():
        pair(i, j, MOVED)
    to_a = {b_line: (a_line, kind) for a_line, (b_line, kind) in to_b.items()}
    return LineMap(to_b, to_a)


def _unique_pairs(deleted: list[int], inserted: list[int], a: list[str], b: list[str]) -> dict[str, tuple[int, int]]:
    def unique(indexes: list[int], lines: list[str]) -> dict[str, int]:
        seen: dict[str, list[int]] = {}
        for i in indexes:
            if len(lines[i]) >= MIN_PAIRING_TEXT:
                seen.setdefault(lines[i], []).append(i)
        return {text: found[0] for text, found in seen.items() if len(found) == 1}

    gone, new = unique(deleted, a), unique(inserted, b)
    return {text: (i, new[text]) for text, i in gone.items() if text in new}


def _paths(report: dict[str, Any]) -> list[str]:
    paths = [str(report.get("script") or "")]
    paths += [h["path"] for h in report.get("hotspots") or []]
    paths += [f["path"] for f in report.get("static_findings") or []]
    paths += [s["path"] for s in report.get("sources") or []]
    return [p for p in dict.fromkeys(paths) if p]


def pair_paths(a: dict[str, Any], b: dict[str, Any]) -> dict[str, str]:
    """A's file -> B's: the same path; else A's script is B's script; else the one B file of the same name."""
    b_paths = _paths(b)
    by_name: dict[str, list[str]] = {}
    for p in b_paths:
        by_name.setdefault(Path(p).name, []).append(p)
    pairs = {}
    for p in _paths(a):
        if p in b_paths:
            pairs[p] = p
        elif p == a.get("script") and b.get("script"):
            pairs[p] = str(b["script"])
        elif len(by_name.get(Path(p).name, [])) == 1:
            pairs[p] = by_name[Path(p).name][0]
    return pairs


def texts(report: dict[str, Any]) -> dict[str, str]:
    """path -> text of each file whose text the report kept."""
    return {s["path"]: s["text"] for s in report.get("sources") or [] if isinstance(s.get("text"), str)}


class Matcher:
    """Line maps between the files of two reports (built once, then asked per line)."""

    def __init__(self, a: dict[str, Any], b: dict[str, Any]) -> None:
        self.pairs = pair_paths(a, b)
        self.back = {pb: pa for pa, pb in self.pairs.items()}
        self.a_texts, self.b_texts = texts(a), texts(b)
        self._maps: dict[str, LineMap | None] = {}
        self.numbered: set[str] = set()  # A's files whose lines were matched by number

    def by_number(self, a_path: str) -> bool:
        """Whether A's file and its B counterpart are matched by line number: neither side has the text, nor a hot
        line of it."""
        b_path = self.pairs.get(a_path)
        return b_path is not None and a_path not in self.a_texts and b_path not in self.b_texts

    def number_warnings(self) -> list[str]:
        """One warning per file whose lines were matched by number."""
        return [f"{Path(p).name}: neither run has the file's text (its source was not found), so its lines are matched "
                "by number; an edit between the runs would pair the wrong lines (give --source-root)" for p in sorted(self.numbered)]

    def line_map(self, a_path: str) -> LineMap | None:
        """The diff of A's file and its B counterpart, when both texts were kept."""
        if a_path not in self._maps:
            b_path = self.pairs.get(a_path)
            a_text, b_text = self.a_texts.get(a_path), self.b_texts.get(b_path or "")
            self._maps[a_path] = diff_texts(a_text, b_text) if a_text is not None and b_text is not None else None
        return self._maps[a_path]

    def a_source(self, path: str, line: int) -> str:
        return _line(self.a_texts.get(path), line)

    def b_source(self, path: str, line: int) -> str:
        return _line(self.b_texts.get(path), line)


def _line(text: str | None, line: int) -> str:
    lines = text.splitlines() if text else []
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


@dataclass(frozen=True)
class Side:
    """One side of a matched line: where it is, its text, and its hot-line entry (None: not among the hot lines)."""

    path: str
    line: int
    source: str
    hot: dict[str, Any] | None


@dataclass(frozen=True)
class LineMatch:
    """A hot line of either run and its counterpart in the other (None: the line is not in that run)."""

    match: str  # same | moved | changed | removed | added | content | unmatched
    before: Side | None
    after: Side | None


def match_hot_lines(a: dict[str, Any], b: dict[str, Any], matcher: Matcher | None = None) -> list[LineMatch]:
    """Every hot line of A and of B, paired across the edit where the line still exists."""
    m = matcher or Matcher(a, b)
    b_hot = {(h["path"], h["line"]): h for h in b.get("hotspots") or []}
    used: set[tuple[str, int]] = set()
    result = []
    for h in a.get("hotspots") or []:
        before = Side(h["path"], h["line"], h.get("source", ""), h)
        b_path = m.pairs.get(h["path"])
        line_map = m.line_map(h["path"])
        if b_path is None:
            result.append(LineMatch(UNMATCHED, before, None))
        elif line_map is not None:
            target = line_map.to_b.get(h["line"])
            if target is None:
                result.append(LineMatch(REMOVED, before, None))
                continue
            line, kind = target
            hot = b_hot.get((b_path, line))
            if hot is not None:
                used.add((b_path, line))
            result.append(LineMatch(kind, before, Side(b_path, line, hot["source"] if hot else m.b_source(b_path, line), hot)))
        else:
            hot = _by_content(h, b_path, b_hot, used)
            if hot is None and not (h.get("source") or "").strip() and m.by_number(h["path"]) and (b_path, h["line"]) not in used:
                hot = b_hot.get((b_path, h["line"]))
                if hot is not None:
                    m.numbered.add(h["path"])
            if hot is None:
                result.append(LineMatch(UNMATCHED, before, None))
            else:
                used.add((hot["path"], hot["line"]))
                kind = SAME if hot["line"] == h["line"] else CONTENT
                result.append(LineMatch(kind, before, Side(hot["path"], hot["line"], hot.get("source", ""), hot)))
    for key, hot in b_hot.items():
        if key in used:
            continue
        after = Side(hot["path"], hot["line"], hot.get("source", ""), hot)
        a_path = m.back.get(hot["path"])
        line_map = m.line_map(a_path) if a_path is not None else None
        if line_map is None and a_path is not None and not (hot.get("source") or "").strip() and m.by_number(a_path):
            m.numbered.add(a_path)
            result.append(LineMatch(SAME, Side(a_path, hot["line"], "", None), after))  # the line had no time in A
            continue
        if line_map is None:
            result.append(LineMatch(UNMATCHED, None, after))
            continue
        origin = line_map.to_a.get(hot["line"])
        if origin is None:
            result.append(LineMatch(ADDED, None, after))
        else:
            line, kind = origin
            result.append(LineMatch(kind, Side(str(a_path), line, m.a_source(str(a_path), line), None), after))
    return result


def _by_content(h: dict[str, Any], b_path: str, b_hot: dict[tuple[str, int], dict[str, Any]], used: set[tuple[str, int]]) -> dict[str, Any] | None:
    """B's hot line with the same text (and function, when both have one), nearest first."""
    source = (h.get("source") or "").strip()
    if not source:
        return None
    found = [
        hot for key, hot in b_hot.items()
        if key not in used and key[0] == b_path and (hot.get("source") or "").strip() == source
        and (not h.get("function") or not hot.get("function") or hot["function"] == h["function"])
    ]
    return min(found, key=lambda hot: (abs(hot["line"] - h["line"]), hot["line"])) if found else None


@dataclass(frozen=True)
class FindingFate:
    """A static finding of either run: fixed (only in A), kept (in both) or new (only in B)."""

    status: str  # fixed | kept | new
    code: str
    name: str
    category: str
    line_status: str  # what happened to A's line: same | moved | changed | removed | unknown ("" for new)
    before: dict[str, Any] | None
    after: dict[str, Any] | None


def finding_fates(a: dict[str, Any], b: dict[str, Any], matcher: Matcher | None = None) -> list[FindingFate]:
    """A's static findings, each fixed or kept in B; then B's new ones."""
    m = matcher or Matcher(a, b)
    remaining = list(b.get("static_findings") or [])
    fates = []
    for f in a.get("static_findings") or []:
        b_path = m.pairs.get(f["path"])
        line_map = m.line_map(f["path"])
        if line_map is not None:
            target = line_map.to_b.get(f["line"])
            line_status = target[1] if target else REMOVED
            expected = line_map.expected_b(f["line"])
        else:
            line_status, expected = "unknown", f["line"]
        same = [g for g in remaining if g["code"] == f["code"] and g["path"] == b_path and abs(g["line"] - expected) <= FINDING_SLACK]
        match = min(same, key=lambda g: abs(g["line"] - expected)) if same else None
        if match is not None:
            remaining.remove(match)
        fates.append(FindingFate("kept" if match else "fixed", f["code"], f.get("name", ""), f.get("category", ""), line_status, f, match))
    fates += [FindingFate("new", g["code"], g.get("name", ""), g.get("category", ""), "", None, g) for g in remaining]
    return fates

