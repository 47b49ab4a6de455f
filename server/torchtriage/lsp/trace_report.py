"""``torchtriage.analyze``: a trace recorded elsewhere, its report drawn on the local files it names.

Argument: the trace's path (a file path or ``file:`` URI, or ``{path}``): a chrome trace (``.json``,
``.json.gz``, ``.pt.trace.json``) or a ``tensorboard_trace_handler`` folder.  ``torchtriage analyze``
finds the trace's file names on this machine (by path tail, under the workspace folders given as
``--source-root``), so report.json's hot lines name local paths, possibly several files.

One analysed trace is kept (:class:`TraceAnnotations`): its annotations per local file, in the file's
numbering on disk when it was analysed.  Open documents get them at once, a document opened later
(or reopened) when it opens; both moved onto the editor's text where it differs from the disk's.
A profile of a file, or clearing its profile, drops the trace's annotations of that file.

Payload (``torchtriage/profileReport``, as a profile's, plus)::

  {"fromTrace": true, "tracePath": str, "files": [uri, ...] (the files with hot lines), ...}

``uri`` is the hottest file's (the trace's own URI when no hot line is on a local file); ``hotLines``
lists the hot lines of every local file, open or not (those of open documents in the editor's numbering).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from .annotations import annotations_from_report
from .code_lens import step_loop_lines
from .documents import Annotation, DocumentState, LineMap, ProfileSummary, shift_annotations


def trace_argument(arguments: list[Any] | None) -> Path:
    """The trace path of ``[path]`` or ``[{path}]``; it must exist."""
    value = arguments[0] if arguments else None
    if isinstance(value, dict):
        value = value.get("path")
    if not isinstance(value, str) or not value:
        raise JsonRpcInvalidParams("expected the trace's path (a .json / .json.gz file or a folder) as the first argument")
    if value.startswith("file:"):
        from pygls.uris import to_fs_path

        value = to_fs_path(value) or ""
    path = Path(value).expanduser()
    if not path.exists():
        raise JsonRpcInvalidParams(f"no trace at {path}")
    return path.resolve()


def _local_file(reported: str) -> Path | None:
    """A report path that names a file on this machine, resolved (the trace's unmapped names are relative)."""
    try:
        path = Path(reported)
        return path.resolve() if path.is_absolute() and path.is_file() else None
    except (OSError, ValueError):
        return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


@dataclass
class TraceFile:
    """One local file a trace's report has lines on: its text on disk then, and its annotations there."""

    uri: str  # the file URI as an open document names it (or ``Path.as_uri``)
    text: str
    annotations: list[Annotation]


@dataclass
class TraceAnnotations:
    """The last analysed trace's annotations per local file (resolved path)."""

    report_path: str | None = None
    summary: ProfileSummary | None = None
    files: dict[Path, TraceFile] = field(default_factory=dict)

    def build(self, report: dict[str, Any], open_uris: dict[Path, str]) -> dict[Path, TraceFile]:
        """Annotations per local file of ``report`` (URIs of open documents as they were opened); the verdict on
        the first step loop of the hottest file that has one."""
        uris: dict[str, Path] = {}

        def mapper(reported: str, line: int) -> tuple[str, int] | None:
            path = _local_file(reported)
            if path is None:
                return None
            uri = open_uris.get(path) or path.as_uri()
            uris[uri] = path
            return uri, line

        texts: dict[Path, str] = {}
        header = None
        hotspots = sorted((h for h in report.get("hotspots") or [] if isinstance(h, dict)), key=lambda h: -_share(h))
        for hotspot in hotspots:
            path = _local_file(str(hotspot.get("path", "")))
            if path is None or path in texts:
                continue
            texts[path] = _read(path)
            loops = step_loop_lines(texts[path])
            if loops:
                header = mapper(str(path), loops[0])
                break
        per_uri = annotations_from_report(report, mapper, header)
        return {uris[uri]: TraceFile(uri, texts.get(uris[uri]) or _read(uris[uri]), annotations) for uri, annotations in per_uri.items()}

    def replace(self, report_path: str, summary: ProfileSummary, files: dict[Path, TraceFile]) -> dict[Path, TraceFile]:
        """Keep this trace's annotations; the files the previous trace annotated that this one does not."""
        dropped = {path: f for path, f in self.files.items() if path not in files}
        self.report_path, self.summary, self.files = report_path, summary, files
        return dropped

    def for_state(self, state: DocumentState) -> TraceFile | None:
        if state.notebook or state.path is None:
            return None
        try:
            return self.files.get(state.path.resolve())
        except OSError:
            return None

    def forget(self, state: DocumentState) -> None:
        """A profile of the file, or clearing its profile: the trace's annotations no longer come back on it."""
        if not state.notebook and state.path is not None:
            self.files.pop(state.path.resolve(), None)

    def show(self, state: DocumentState) -> bool:
        """Put this trace's annotations (and its summary, for the lens) on an open text document; whether it has any."""
        found = self.for_state(state)
        target = state.targets.get(state.uri)
        if found is None or target is None:
            return False
        annotations = found.annotations
        if target.text != found.text:  # edited (or changed on disk) since: keep lines that still match
            annotations = shift_annotations(annotations, LineMap.for_texts(found.text, target.text))
        target.annotations = annotations
        state.profile = self.summary
        return True


def _share(hotspot: dict[str, Any]) -> float:
    share = hotspot.get("share")
    return float(share) if isinstance(share, (int, float)) and not isinstance(share, bool) else 0.0


def trace_hot_lines(files: dict[Path, TraceFile], shown: dict[Path, DocumentState]) -> list[dict[str, Any]]:
    """The payload's ``hotLines``: every local file's, those of open documents (``shown``) as the editor numbers them."""
    result = []
    for path, found in files.items():
        state = shown.get(path)
        target = state.targets.get(state.uri) if state is not None else None
        uri, annotations = (target.uri, target.annotations) if target is not None else (found.uri, found.annotations)
        result += [
            {
                "uri": uri, "line": a.line, "share": a.share, "msPerStep": a.ms_per_step, "category": a.category,
                "label": a.label, "codes": list(a.codes), "deltaMsPerStep": None,
            }
            for a in annotations
            if a.kind == "hotspot"
        ]
    result.sort(key=lambda h: -h["share"])
    return result


def trace_payload(trace: Path, report: dict[str, Any], summary: ProfileSummary, hot_lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``torchtriage/profileReport`` payload of an analysed trace."""
    files = list(dict.fromkeys(h["uri"] for h in hot_lines))
    ranks = report.get("ranks") or {}
    return {
        "uri": files[0] if files else trace.as_uri(),
        "fromTrace": True,
        "tracePath": str(trace),
        "reportPath": summary.report_path,
        "htmlPath": summary.html_path,
        "summary": {"bottleneck": summary.bottleneck, "share": summary.share, "stepTimeMs": summary.step_time_ms},
        "rank": ranks.get("shown_rank") if isinstance(ranks, dict) else None,
        "ranks": ranks.get("covered", []) if isinstance(ranks, dict) else [],
        "files": files,
        "hotLines": hot_lines,
    }
