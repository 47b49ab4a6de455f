"""torch.compile's compiled frames, read from the agent's records; report.json's ``compile`` block.

The attribution (``attribution/compiles.py``: ``read_compiles``) turns the agent's ``compiles`` / ``graph_breaks`` records
(agent/dynamo_watch.py: dynamo's own callbacks, logs and compilation metrics)
into ``CompileEvent`` / ``GraphBreakSite`` on the steps' clock, with the
compile time that fell inside each recorded step: ``build_profile`` leaves that
time out of the step (``StepTiming.compile_us``), so compiling is never step time.

A *compiled frame* is one code object dynamo compiled ("frame" in its
"frame/attempt" ids): the user's function, torch's wrapper around a compiled
module, or the resume function dynamo makes for the code after a graph break.
Attempts after the first are recompiles, each caused by a failed guard.
``compile_report`` is report.json's ``compile`` block; ``compile_findings``
turns the same frames into TTR501 / TTR502.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field
from typing import Any

from .advice import where
from ..results.profile_data import CompileEvent, GraphBreakSite, ProfileData

REGION_OP = "Torch-Compiled Region: "  # dynamo's range around each run of a compiled graph: "...: frame/attempt"
_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_(\d+)$")
LIMIT_WORDS = ("recompile limit", "recompile_limit", "cache_size_limit", "cache size limit")
MAX_GUARDS = 5



def frame_of(compile_id: str) -> str:
    return compile_id.split("/", 1)[0]


def attempt(compile_id: str) -> int:
    try:
        return int(compile_id.split("/", 1)[1])
    except (IndexError, ValueError):
        return 0


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _guard_text(reason: str) -> str:
    """A failed guard without dynamo's "frame/attempt: " prefix and its trailing "# source  # file:line" comment."""
    text = re.sub(r"^\d+/\d+:\s*", "", _first_line(reason))
    return re.split(r"\s+#\s", text, maxsplit=1)[0].strip()


@dataclass
class CompiledFrame:
    """One code object dynamo compiled, with all its compile attempts."""

    frame: str
    compiles: list[CompileEvent] = field(default_factory=list)  # dynamo's compiles of the frame, recompiles included
    others: list[CompileEvent] = field(default_factory=list)  # other compiles of its graphs (the lazy backward)

    @property
    def compile_us(self) -> float:
        return sum(c.duration_us for c in self.compiles + self.others)

    @property
    def named(self) -> CompileEvent:
        """The compile that names the code (a failed attempt may have no name)."""
        return next((c for c in self.compiles if c.function), self.compiles[0])

    @property
    def function(self) -> str:
        return self.named.function

    @property
    def resume(self) -> tuple[str, int] | None:
        """(function, line) the code after a graph break resumes in, for dynamo's resume functions."""
        match = _RESUME.match(self.function)
        return (match.group(1), int(match.group(2))) if match else None

    @property
    def recompiles(self) -> list[CompileEvent]:
        return [c for c in self.compiles if attempt(c.compile_id) > 0]

    @property
    def limit_hit(self) -> bool:
        return any(any(w in c.fail_reason.lower() for w in LIMIT_WORDS) for c in self.compiles)

    @property
    def guards(self) -> list[str]:
        """The distinct failed guards (first line each, without dynamo's "frame/attempt: " prefix)."""
        texts = [_guard_text(c.recompile_reason) for c in self.compiles if c.recompile_reason]
        return list(dict.fromkeys(t for t in texts if t))[:MAX_GUARDS]

    def call_site(self, recompiles_only: bool = False) -> tuple[str, int]:
        """The user line that called this code most often (among its recompiles when asked)."""
        pool = self.recompiles if recompiles_only and self.recompiles else self.compiles
        sites = collections.Counter((c.call_path, c.call_line) for c in pool if c.call_path)
        if sites:
            return sites.most_common(1)[0][0]
        named = self.named
        return named.path, named.line

    def label(self, user_paths: set[str]) -> str:
        """How reports name it: the function and its file, or what it was called from."""
        named = self.named
        resumed = self.resume
        if resumed is not None:
            return f"the code after the graph break at {where(named.path, resumed[1])} (in {resumed[0]})"
        if named.path in user_paths and named.function:
            return f"{named.function} ({where(named.path, named.line)})"
        path, line = self.call_site()
        return f"the compiled callable called at {where(path, line)}" if path else f"compiled frame {self.frame}"


def compiled_frames(profile: ProfileData) -> list[CompiledFrame]:
    frames: dict[str, CompiledFrame] = {}
    for c in profile.compiles:
        frame = frames.setdefault(frame_of(c.compile_id), CompiledFrame(frame_of(c.compile_id)))
        (frame.compiles if c.trigger == "dynamo" else frame.others).append(c)
    return sorted((f for f in frames.values() if f.compiles), key=lambda f: int(f.frame) if f.frame.isdigit() else 0)


def user_paths(profile: ProfileData) -> set[str]:
    """Files the run counts as the user's: those it charged time to, the script, the compile call sites."""
    paths = {c.path for c in profile.lines} | {profile.script} | {c.call_path for c in profile.compiles if c.call_path}
    return {p for p in paths if p}


def graph_runs(profile: ProfileData) -> dict[str, tuple[float, float]]:
    """frame -> (runs of its compiled graphs per step, ms per step), from dynamo's "Torch-Compiled Region" ranges."""
    n = max(1, profile.steps_profiled)
    out: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for op in profile.ops:
        if op.name.startswith(REGION_OP):
            entry = out[frame_of(op.name[len(REGION_OP):].strip())]
            entry[0] += op.calls / n
            entry[1] += op.total_us / n / 1000.0
    return {k: (v[0], v[1]) for k, v in out.items()}


def window_split(profile: ProfileData) -> dict[str, float]:
    """frame -> the compile time (us) left out of recorded steps, each step's split between the frames compiling in it."""
    out: dict[str, float] = collections.defaultdict(float)
    for step in profile.steps:
        if step.compile_us <= 0:
            continue
        overlaps: dict[str, float] = collections.defaultdict(float)
        for c in profile.compiles:
            overlap = min(c.start_us + c.duration_us, step.end_us) - max(c.start_us, step.start_us)
            if overlap > 0:
                overlaps[frame_of(c.compile_id)] += overlap
        total = sum(overlaps.values())
        for frame, overlap in overlaps.items():
            out[frame] += step.compile_us * overlap / total
    return out


def compile_report(profile: ProfileData) -> dict[str, Any] | None:
    """report.json's ``compile`` block (new in 1.2); None when the run compiled nothing."""
    if not profile.compiles and not profile.graph_breaks:
        return None
    users = user_paths(profile)
    runs = graph_runs(profile)
    sites = break_sites(profile)
    window = window_split(profile)
    frames = []
    for frame in compiled_frames(profile):
        path, line = frame.call_site()
        graphs, ms = runs.get(frame.frame, (0.0, 0.0))
        frames.append({
            "frame": frame.frame,
            "name": frame.label(users),
            "function": frame.function,
            "path": frame.named.path or None,
            "line": frame.named.line or None,
            "call_path": path or None,
            "call_line": line or None,
            "compiles": len(frame.compiles),
            "recompiles": len(frame.recompiles),
            "failed_guards": frame.guards,
            "recompile_limit_hit": frame.limit_hit,
            "graph_breaks": sum(1 for s in sites if frame_of(s[0].compile_id) == frame.frame),
            "compile_time_s": round(frame.compile_us / 1e6, 4),
            "compile_ms_in_window": round(window.get(frame.frame, 0.0) / 1000.0, 3),
            "graph_runs_per_step": round(graphs, 3),
            "graph_ms_per_step": round(ms, 4),
        })
    return {
        "compile_time_s": round(sum(c.duration_us for c in profile.compiles) / 1e6, 4),
        "compile_ms_in_window": round(sum(s.compile_us for s in profile.steps) / 1000.0, 3),
        "compiles": len(profile.compiles),
        "recompiles": sum(1 for c in profile.compiles if attempt(c.compile_id) > 0),
        "graph_breaks": len(sites),
        "recompile_limit_hit": any(f["recompile_limit_hit"] for f in frames),
        "frames": frames,
    }


def break_sites(profile: ProfileData) -> list[tuple[GraphBreakSite, int]]:
    """Distinct (path, line, kind) graph breaks, each with how many times dynamo logged it."""
    seen: dict[tuple[str, int, str], list[Any]] = {}
    for b in profile.graph_breaks:
        if not b.path or any(w in b.kind.lower() for w in LIMIT_WORDS):
            continue  # the recompile limit is reported as TTR502
        entry = seen.setdefault((b.path, b.line, b.kind), [b, 0])
        entry[1] += 1
    return [(b, count) for b, count in seen.values()]
