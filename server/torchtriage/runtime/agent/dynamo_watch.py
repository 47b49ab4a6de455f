"""What torch.compile did in the user's process: compiles, recompiles and graph breaks.

Nothing here traces or re-implements dynamo; it reads what dynamo records:

* its compile start/end callbacks (``torch._dynamo.callback_handler``): each
  compile's wall-clock interval (the profiler's clock) and, from the live Python
  stack, the user line whose call started it;
* its ``graph_breaks`` artifact loggers: a handler set to DEBUG on them, not
  propagated (nothing is printed), receives each break's "Graph break in user
  code at FILE:LINE" and "Graph Break Reason" text; the exception being
  handled names the break's type (``gb_type``);
* ``torch._dynamo.utils.get_compilation_metrics()`` at the end: per compile,
  the code object compiled, the guard whose failure caused a recompile, a
  failure such as the recompile limit, and its compile time.

Importing ``torch._dynamo`` costs seconds, so the watch wraps ``torch.compile``
and starts on its first call: a script that never compiles pays nothing.
Standard library and torch only (runs in the user's interpreter).
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from .wire import Compile, GraphBreak

# The artifact loggers dynamo writes graph breaks to (torch._logging.getArtifactLogger names).
GRAPH_BREAK_LOGGERS = (
    "torch._dynamo.symbolic_convert.__graph_breaks",
    "torch._dynamo.convert_frame.__graph_breaks",
    "torch._dynamo.exc.__graph_breaks",
)
_AT = re.compile(r"in user code at (.+?):(\d+)\s*$", re.MULTILINE)
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
MAX_TEXT = 2000  # characters of a reason or guard text kept


class _BreakHandler(logging.Handler):
    """Turns dynamo's graph-break log records into ``GraphBreak`` records."""

    def __init__(self, watch: "DynamoWatch") -> None:
        super().__init__(logging.DEBUG)
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.watch.graph_break(record.getMessage())
        except Exception:  # a log handler must never break the user's compile
            pass


class DynamoWatch:
    """Collects ``Compile`` and ``GraphBreak`` records; ``install()`` before the script runs."""

    def __init__(self, is_user: Callable[[str], bool], absolute: Callable[[str], str], skipped: Sequence[Any] = (),
                 on_compile: Optional[Callable[[bool], None]] = None) -> None:
        """``skipped``: code objects of our own hooks, which dynamo must run as they are, never compile;
        ``on_compile(True/False)``: told when compiling starts and ends."""
        self.is_user = is_user
        self.absolute = absolute
        self.skipped = list(skipped)
        self.on_compile = on_compile
        self.active = False
        self.breaks: List[GraphBreak] = []
        self._starts: Dict[Tuple[str, str], Tuple[int, str, int]] = {}  # (compile id, trigger) -> (start ns, call path, line)
        self._intervals: List[Tuple[str, str, int, int, str, int]] = []  # compile id, trigger, start, end, call path, line
        self._original: Any = None
        self._handler: Optional[_BreakHandler] = None

    # -- installation ----------------------------------------------------
    def install(self) -> None:
        """Wrap ``torch.compile`` so that its first call starts the watch."""
        original = getattr(torch, "compile", None)
        if original is None or self._original is not None:
            return
        watch = self

        @functools.wraps(original)
        def compile(*args: Any, **kwargs: Any) -> Any:
            watch.activate()
            return original(*args, **kwargs)

        self._original = original
        torch.compile = compile  # type: ignore[assignment]

    def activate(self) -> None:
        """Register the callbacks and the graph-break handler (once)."""
        if self.active:
            return
        self.active = True
        try:
            import torch._dynamo

            handler = torch._dynamo.callback_handler
            handler.register_start_callback(self._started)
            handler.register_end_callback(self._ended)
        except Exception:  # an older torch without the callback API: metrics only
            pass
        try:
            from torch._dynamo.eval_frame import skip_code

            for code in self.skipped:
                skip_code(code)
        except Exception:
            pass
        self._handler = _BreakHandler(self)
        for name in GRAPH_BREAK_LOGGERS:
            logger = logging.getLogger(name)
            logger.addHandler(self._handler)
            if logger.getEffectiveLevel() > logging.DEBUG:
                logger.setLevel(logging.DEBUG)
                logger.propagate = False  # recorded, not printed (unless the user asked TORCH_LOGS for them)

    def uninstall(self) -> None:
        if self._original is not None:
            torch.compile = self._original  # type: ignore[assignment]
            self._original = None

    # -- callbacks ---------------------------------------------------------
    def _started(self, args: Any) -> None:
        try:  # a callback that raised would fail the user's compile
            if self.on_compile is not None:
                self.on_compile(True)
            path, line = self._call_site()
            self._starts[(str(args.compile_id), _trigger(args))] = (time.time_ns(), path, line)
        except Exception:
            pass

    def _ended(self, args: Any) -> None:
        try:
            key = (str(args.compile_id), _trigger(args))
            start = self._starts.pop(key, None)
            if start is not None:
                self._intervals.append((key[0], key[1], start[0], time.time_ns(), start[1], start[2]))
            if self.on_compile is not None:
                self.on_compile(False)
        except Exception:
            pass

    def _call_site(self) -> Tuple[str, int]:
        """The innermost user frame on the live stack: the line that called the compiled code."""
        frame: Any = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if self.is_user(filename):
                return self.absolute(filename), frame.f_lineno
            frame = frame.f_back
        return "", 0

    def graph_break(self, message: str) -> None:
        """One graph-break log message -> a ``GraphBreak`` (its user line, type and dynamo's text)."""
        path, line = _break_line(message, self.is_user)
        reason = message.split("Graph Break Reason:", 1)[1] if "Graph Break Reason:" in message else message
        reason = reason.split("\nUser code traceback:", 1)[0].strip()
        exc = sys.exc_info()[1]
        kind = str(getattr(exc, "gb_type", "") or "") or _first_line(reason)
        compile_id = ""
        try:
            current = torch._guards.CompileContext.current_compile_id()
            compile_id = str(current) if current is not None else ""
        except Exception:
            pass
        self.breaks.append(GraphBreak(compile_id, self.absolute(path) if path else "", line, kind[:MAX_TEXT], reason[:MAX_TEXT]))

    # -- results -----------------------------------------------------------
    def compiles(self) -> List[Compile]:
        """Every compile seen: the callbacks' intervals joined with dynamo's compilation metrics."""
        metrics = _metrics()
        out: List[Compile] = []
        timed = set()
        for compile_id, trigger, start, end, call_path, call_line in self._intervals:
            m = metrics.get(compile_id) if trigger == "dynamo" else None
            if m is not None:
                timed.add(compile_id)
            out.append(_record(compile_id, trigger, m, start, end, call_path, call_line, self.absolute))
        for compile_id, m in metrics.items():
            if compile_id in timed:
                continue
            start = int(float(getattr(m, "start_time", 0.0) or 0.0) * 1e9)
            seconds = float(getattr(m, "entire_frame_compile_time_s", 0.0) or 0.0)
            out.append(_record(compile_id, "dynamo", m, start, start + int(seconds * 1e9), "", 0, self.absolute))
        out.sort(key=lambda c: (c.start_ns, c.compile_id))
        return out

    def summary(self) -> Dict[str, Any]:
        """Dynamo's own counters and limits, for agent.json's ``meta``: {} when dynamo never loaded."""
        dynamo = sys.modules.get("torch._dynamo")
        if dynamo is None:
            return {}
        try:
            from torch._dynamo.utils import counters

            config = dynamo.config
            return {
                "graph_breaks_counted": int(sum(counters["graph_break"].values())),
                "unique_graphs": int(counters["stats"].get("unique_graphs", 0)),
                "recompile_limit": int(getattr(config, "recompile_limit", getattr(config, "cache_size_limit", 0)) or 0),
                "watched": self.active,
            }
        except Exception:
            return {"watched": self.active}


def _trigger(args: Any) -> str:
    trigger = getattr(args, "callback_trigger", None)
    return str(getattr(trigger, "name", trigger) or "dynamo").lower()


def _metrics() -> Dict[str, Any]:
    """compile id -> dynamo's CompilationMetrics, when dynamo was loaded."""
    if "torch._dynamo" not in sys.modules:
        return {}
    try:
        from torch._dynamo.utils import get_compilation_metrics

        out: Dict[str, Any] = {}
        for m in get_compilation_metrics():  # a backward compile shares its forward's id and names no code: keep the named one
            key = str(getattr(m, "compile_id", "") or "")
            if key and (key not in out or not getattr(out[key], "co_name", None)):
                out[key] = m
        return out
    except Exception:
        return {}


def _record(compile_id: str, trigger: str, m: Any, start: int, end: int, call_path: str, call_line: int,
            absolute: Callable[[str], str]) -> Compile:
    filename = str(getattr(m, "co_filename", "") or "")
    return Compile(
        compile_id, trigger, str(getattr(m, "co_name", "") or ""), absolute(filename) if filename else "",
        int(getattr(m, "co_firstlineno", 0) or 0), call_path, call_line, start, max(start, end),
        str(getattr(m, "recompile_reason", "") or "")[:MAX_TEXT], str(getattr(m, "fail_reason", "") or "")[:MAX_TEXT],
    )


def _break_line(message: str, is_user: Callable[[str], bool]) -> Tuple[str, int]:
    """The line a graph-break message names ("... in user code at FILE:LINE"; dynamo calls any traced code
    "user code"): when that is library code, the innermost frame of the user's own in its traceback."""
    found = _AT.search(message)
    named = (found.group(1), int(found.group(2))) if found else ("", 0)
    if named[0] and is_user(named[0]):
        return named
    frames = [(f, int(n)) for f, n in _FILE_LINE.findall(message) if is_user(f)]
    return frames[-1] if frames else named


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:  # "Encountered graph break when attempting to trace ..." heads the reason: the type follows
        if not line.startswith("Encountered graph break"):
            return line
    return lines[0] if lines else ""
