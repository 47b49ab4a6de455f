"""torch.compile at runtime: compiled frames, graph breaks (TTR501) and recompiles (TTR502).

``read_compiles`` turns the agent's ``compiles`` / ``graph_breaks`` records
(agent/dynamo_watch.py: dynamo's own callbacks, logs and compilation metrics)
into ``CompileEvent`` / ``GraphBreakSite`` on the steps' clock, with the
compile time that fell inside each recorded step: ``build_profile`` leaves that
time out of the step (``StepTiming.compile_us``), so compiling is never step time.

A *compiled frame* is one code object dynamo compiled ("frame" in its
"frame/attempt" ids): the user's function, torch's wrapper around a compiled
module, or the resume function dynamo makes for the code after a graph break.
Attempts after the first are recompiles, each caused by a failed guard.
``compile_report`` is report.json's ``compile`` block; ``compile_findings``
the findings.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..findings import Finding
from .advice import where
from .agent.wire import Compile, GraphBreak, Step, read_records
from .model import CompileEvent, GraphBreakSite, ProfileData
from .runtime_finding import runtime_finding
from .verdicts import Evidence, Recommendation

REGION_OP = "Torch-Compiled Region: "  # dynamo's range around each run of a compiled graph: "...: frame/attempt"
_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_(\d+)$")
LIMIT_WORDS = ("recompile limit", "recompile_limit", "cache_size_limit", "cache size limit")
MAX_GUARDS = 5


def read_compiles(raw: dict[str, Any], steps: Sequence[Step]) -> tuple[list[CompileEvent], list[GraphBreakSite], list[float]]:
    """The agent's compile and graph-break records, and each recorded step's compile time (us)."""
    origin = steps[0].start_ns if steps else 0
    per_step = [0.0] * len(steps)
    events = []
    for c in read_records(raw.get("compiles", []), Compile):
        inside = 0.0
        for i, step in enumerate(steps):
            overlap = min(c.end_ns, step.end_ns) - max(c.start_ns, step.start_ns)
            if overlap > 0:
                per_step[i] += overlap / 1000.0
                inside += overlap / 1000.0
        events.append(
            CompileEvent(
                compile_id=c.compile_id, trigger=c.trigger, function=c.function, path=c.path, line=c.line,
                call_path=c.call_path, call_line=c.call_line,
                start_us=round((c.start_ns - origin) / 1000.0, 3) if origin and c.start_ns else 0.0,
                duration_us=round((c.end_ns - c.start_ns) / 1000.0, 3), recompile_reason=c.recompile_reason,
                fail_reason=c.fail_reason, in_window_us=round(inside, 3),
            )
        )
    breaks = [GraphBreakSite(b.compile_id, b.path, b.line, b.kind, b.reason) for b in read_records(raw.get("graph_breaks", []), GraphBreak)]
    return events, breaks, per_step


def _frame_of(compile_id: str) -> str:
    return compile_id.split("/", 1)[0]


def _attempt(compile_id: str) -> int:
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
        return [c for c in self.compiles if _attempt(c.compile_id) > 0]

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
        frame = frames.setdefault(_frame_of(c.compile_id), CompiledFrame(_frame_of(c.compile_id)))
        (frame.compiles if c.trigger == "dynamo" else frame.others).append(c)
    return sorted((f for f in frames.values() if f.compiles), key=lambda f: int(f.frame) if f.frame.isdigit() else 0)


def _user_paths(profile: ProfileData) -> set[str]:
    """Files the run counts as the user's: those it charged time to, the script, the compile call sites."""
    paths = {c.path for c in profile.lines} | {profile.script} | {c.call_path for c in profile.compiles if c.call_path}
    return {p for p in paths if p}


def _graph_runs(profile: ProfileData) -> dict[str, tuple[float, float]]:
    """frame -> (runs of its compiled graphs per step, ms per step), from dynamo's "Torch-Compiled Region" ranges."""
    n = max(1, profile.steps_profiled)
    out: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for op in profile.ops:
        if op.name.startswith(REGION_OP):
            entry = out[_frame_of(op.name[len(REGION_OP):].strip())]
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
                overlaps[_frame_of(c.compile_id)] += overlap
        total = sum(overlaps.values())
        for frame, overlap in overlaps.items():
            out[frame] += step.compile_us * overlap / total
    return out


def compile_report(profile: ProfileData) -> dict[str, Any] | None:
    """report.json's ``compile`` block (new in 1.2); None when the run compiled nothing."""
    if not profile.compiles and not profile.graph_breaks:
        return None
    users = _user_paths(profile)
    runs = _graph_runs(profile)
    sites = _break_sites(profile)
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
            "graph_breaks": sum(1 for s in sites if _frame_of(s[0].compile_id) == frame.frame),
            "compile_time_s": round(frame.compile_us / 1e6, 4),
            "compile_ms_in_window": round(window.get(frame.frame, 0.0) / 1000.0, 3),
            "graph_runs_per_step": round(graphs, 3),
            "graph_ms_per_step": round(ms, 4),
        })
    return {
        "compile_time_s": round(sum(c.duration_us for c in profile.compiles) / 1e6, 4),
        "compile_ms_in_window": round(sum(s.compile_us for s in profile.steps) / 1000.0, 3),
        "compiles": len(profile.compiles),
        "recompiles": sum(1 for c in profile.compiles if _attempt(c.compile_id) > 0),
        "graph_breaks": len(sites),
        "recompile_limit_hit": any(f["recompile_limit_hit"] for f in frames),
        "frames": frames,
    }


# -- graph breaks (TTR501) -----------------------------------------------------
def _break_sites(profile: ProfileData) -> list[tuple[GraphBreakSite, int]]:
    """Distinct (path, line, kind) graph breaks, each with how many times dynamo logged it."""
    seen: dict[tuple[str, int, str], list[Any]] = {}
    for b in profile.graph_breaks:
        if not b.path or any(w in b.kind.lower() for w in LIMIT_WORDS):
            continue  # the recompile limit is reported as TTR502
        entry = seen.setdefault((b.path, b.line, b.kind), [b, 0])
        entry[1] += 1
    return [(b, count) for b, count in seen.values()]


def _hints(reason: str) -> list[str]:
    """dynamo's own "Explanation:" and "Hint:" lines."""
    return [line.strip() for line in reason.splitlines() if line.strip().startswith(("Explanation:", "Hint:"))]


def break_fixes(kind: str, reason: str) -> list[Recommendation]:
    """What to do about one graph break, by its type."""
    text = f"{kind}\n{reason}".lower()
    if ".item()" in text or "capture_scalar_outputs" in text or "_local_scalar_dense" in text:
        return [
            Recommendation(
                "Move the .item() (and any branch on its value) out of the compiled function",
                "the graph ends at .item(): the call runs as two graphs with eager code between them, and the read waits for the device",
                "out = compiled_step(x)          # return the tensor\nif step % 100 == 0:\n    print(out.mean().item())",
            ),
            Recommendation(
                "Or keep the scalar in the graph: torch._dynamo.config.capture_scalar_outputs = True",
                "dynamo then traces .item() as a symbolic value instead of breaking",
                "torch._dynamo.config.capture_scalar_outputs = True",
            ),
            Recommendation(
                "For a branch on a tensor's value, use torch.where or torch.cond",
                "both keep the choice inside one graph",
                "h = torch.where(h.mean() > 0.1, h * 2, h)\n# or: h = torch.cond(h.mean() > 0.1, lambda t: t * 2, lambda t: t, (h,))",
            ),
        ]
    if "data-dependent" in text or "generic_jump" in text or "jump" in kind.lower():
        return [
            Recommendation(
                "Replace the Python `if` on a tensor with torch.where or torch.cond",
                "dynamo cannot know the branch taken without running the graph, so it breaks there",
                "y = torch.where(mask, a, b)\n# or: y = torch.cond(pred, true_fn, false_fn, (x,))",
            )
        ]
    if "print" in text or "logging" in text or "logger" in text:
        return [Recommendation("Move print/logging out of the compiled function", "each call splits the graph", "")]
    return [
        Recommendation(
            "Move the unsupported call out of the compiled function, or isolate it with torch.compiler.disable",
            "dynamo cannot trace it, so the graph ends there and the rest of the function compiles separately",
            "@torch.compiler.disable\ndef helper(...):\n    ...",
        )
    ]


def _line_cost(profile: ProfileData, path: str, line: int) -> float:
    """Time charged to one line over the recorded steps (us)."""
    return sum(c.self_us for c in profile.lines if c.path == path and c.line == line)


def _break_findings(profile: ProfileData, frames: dict[str, CompiledFrame], users: set[str]) -> list[Finding]:
    n = max(1, profile.steps_profiled)
    total = sum(s.duration_us for s in profile.steps)
    runs = _graph_runs(profile)
    sites = _break_sites(profile)
    per_frame = collections.Counter(_frame_of(b.compile_id) for b, _ in sites)
    out = []
    for b, logged in sites:
        frame = frames.get(_frame_of(b.compile_id))
        region = frame.label(users) if frame is not None else "a compiled function"
        us = _line_cost(profile, b.path, b.line)
        graphs = runs.get(frame.frame, (0.0, 0.0))[0] if frame is not None else 0.0
        evidence = [Evidence(f"dynamo: {b.kind}", b.path, b.line)]
        evidence += [Evidence(f"dynamo: {hint}") for hint in _hints(b.reason)]
        if frame is not None:
            call_path, call_line = frame.call_site()
            breaks = per_frame[frame.frame]
            evidence.append(Evidence(
                f"{region}: {breaks} graph break{'s' if breaks != 1 else ''}; called at {where(call_path, call_line)}"
                + (f"; its compiled graphs ran {graphs:.1f}x per step" if graphs else ""),
                call_path, call_line,
            ))
        message = (
            f"graph break in {region} under torch.compile: {b.kind}. The compiled graph ends here, this line runs eagerly "
            "and a new graph starts after it"
            + (f"; {us / n / 1000:.2f} ms per step is charged to this line" if us > 0 else "")
        )
        out.append(runtime_finding(
            "TTR501", b.path, b.line, message, loud=True, share=us / total if total > 0 else 0.0, us_per_step=us / n,
            evidence=evidence, recommendations=break_fixes(b.kind, b.reason),
            details={"compiled": region, "frame": frame.frame if frame is not None else None, "kind": b.kind,
                     "reason": b.reason, "times_logged": logged, "graph_runs_per_step": round(graphs, 3)},
        ))
    return out


# -- recompiles (TTR502) --------------------------------------------------------
def guard_kind(guard: str) -> str:
    """What changed, from a failed guard's text: shape, dtype, value, requires_grad, global_state, object, length, other."""
    text = guard.lower()
    if "size mismatch" in text or "stride mismatch" in text or "dimensionality" in text or ".size(" in text:
        return "shape"
    if "dtype" in text:
        return "dtype"
    if "requires_grad" in text:
        return "requires_grad"
    if "grad_mode" in text or "global_state" in text or "global state" in text:
        return "global_state"
    if re.search(r"(___stack\d+|l\[[^\]]+\]|\w+) == -?\d", text):
        return "value"
    if "len(" in text:
        return "length"
    if "id(" in text or "obj_id" in text or "type(" in text:
        return "object"
    return "other"


WHAT_CHANGED = {
    "shape": "a new input shape",
    "dtype": "a new input dtype",
    "value": "a new Python number, which dynamo specialised",
    "requires_grad": "requires_grad changed",
    "global_state": "grad mode or other global state changed",
    "length": "a list or dict changed length",
    "object": "a different object or attribute",
    "other": "a guard failed",
}


def recompile_fixes(kind: str, limit_hit: bool, limit: int) -> list[Recommendation]:
    """What to do about recompiles, by what changed."""
    if kind == "shape":
        fixes = [
            Recommendation(
                "Pad inputs to a few fixed lengths (buckets)",
                "each new shape is a new graph; a handful of bucket lengths fits in the compile cache",
                "length = next(b for b in (64, 128, 256, 512) if b >= x.size(1))\nx = torch.nn.functional.pad(x, (0, length - x.size(1)))",
            ),
            Recommendation("Keep the batch size fixed", "the last, smaller batch of an epoch is a new shape",
                           "DataLoader(dataset, batch_size=64, drop_last=True)"),
            Recommendation(
                "Compile for dynamic shapes: torch.compile(model, dynamic=True), or mark the varying dimension",
                "one graph for every size, at some cost in kernel specialisation",
                "torch._dynamo.mark_dynamic(x, 0)  # before the first call\ncompiled = torch.compile(model, dynamic=True)",
            ),
        ]
    elif kind == "dtype":
        fixes = [Recommendation("Cast inputs to one dtype before the call", "each dtype is a separate graph", "x = x.to(torch.float32)")]
    elif kind == "value":
        fixes = [
            Recommendation(
                "Pass changing numbers as tensors, not Python scalars (or .item() results)",
                "dynamo specialises on a Python number's value: each new value recompiles until it marks it dynamic",
                "lr_t = torch.tensor(lr)  # instead of a float argument",
            )
        ]
    else:
        fixes = [
            Recommendation(
                "Keep what the compiled code reads fixed between calls (module attributes, globals, flags)",
                "dynamo guards on everything it read while tracing; TORCH_LOGS=recompiles prints each failing guard",
                "TORCH_LOGS=recompiles python train.py",
            )
        ]
    if limit_hit:
        fixes.insert(0, Recommendation(
            "Remove the cause of the recompiles; raising torch._dynamo.config.recompile_limit only buys more compiles",
            f"after {limit} compiles of one function dynamo stops compiling it: calls whose guards fail run eagerly, without the speed-up",
            "",
        ))
    return fixes


def _recompile_findings(profile: ProfileData, frames: list[CompiledFrame], users: set[str]) -> list[Finding]:
    n = max(1, profile.steps_profiled)
    limit = int((profile.extra.get("dynamo") or {}).get("recompile_limit", 8) or 8)
    window = window_split(profile)
    out = []
    for frame in frames:
        recompiles = frame.recompiles
        if not recompiles:
            continue
        path, line = frame.call_site(recompiles_only=True)
        guards = frame.guards
        kind = guard_kind(guards[0]) if guards else "other"
        label = frame.label(users)
        seconds = sum(c.duration_us for c in recompiles) / 1e6
        window_ms = window.get(frame.frame, 0.0) / 1000.0
        limit_hit = frame.limit_hit
        message = (
            f"{label} was recompiled {len(recompiles)} time{'s' if len(recompiles) != 1 else ''}: {WHAT_CHANGED[kind]}"
            + (f" ({guards[0]})" if guards else "")
            + (f"; it hit the recompile limit ({limit}): later calls with new guards run eagerly" if limit_hit else "")
            + f"; recompiling took {seconds:.2f} s"
            + (f", {window_ms:.0f} ms of it inside the recorded steps (left out of the step times)" if window_ms > 0 else "")
        )
        evidence = [Evidence(f"failed guard: {g}") for g in guards]
        evidence.append(Evidence(f"{label} is called at {where(path, line)}; {len(frame.compiles)} compiles in all", path, line))
        fixes = recompile_fixes(kind, limit_hit, limit)
        resumed = frame.resume
        if resumed is not None:  # dynamo's resume function exists only because of the graph break before it
            fixes.insert(0, Recommendation(
                f"Remove the graph break at {where(frame.named.path, resumed[1])} (TTR501): this code is compiled apart only because of it",
                "without the break there is no resume function to recompile", ""))
        out.append(runtime_finding(
            "TTR502", path, line, message, loud=limit_hit or window_ms > 0 or len(recompiles) >= 2,
            us_per_step=window_ms * 1000.0 / n, evidence=evidence, recommendations=fixes,
            details={"compiled": label, "frame": frame.frame, "function": frame.function, "compiles": len(frame.compiles),
                     "recompiles": len(recompiles), "failed_guards": guards, "changed": kind, "recompile_limit_hit": limit_hit,
                     "recompile_limit": limit, "compile_time_s": round(seconds, 4), "compile_ms_in_window": round(window_ms, 3)},
        ))
    return out


def compile_findings(profile: ProfileData) -> list[Finding]:
    """TTR501 for each graph break, TTR502 for each compiled frame that recompiled."""
    if not profile.compiles and not profile.graph_breaks:
        return []
    frames = compiled_frames(profile)
    users = _user_paths(profile)
    return _break_findings(profile, {f.frame: f for f in frames}, users) + _recompile_findings(profile, frames, users)
