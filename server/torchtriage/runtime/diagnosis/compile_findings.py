"""torch.compile findings: graph breaks (TTR501) and recompiles (TTR502), with their fixes.

Built on ``compile_frames`` (what dynamo compiled, read from the agent's
records): a TTR501 for each distinct graph break, on the user line dynamo
names; a TTR502 for each compiled frame compiled again, on the line that
called it, with the failed guards and what changed.
"""

from __future__ import annotations

import collections
import re

from ...findings import Finding
from .advice import where
from .compile_frames import CompiledFrame, break_sites, compiled_frames, frame_of, graph_runs, user_paths, window_split
from ..results.profile_data import ProfileData
from .runtime_finding import runtime_finding
from ..results.verdicts import Evidence, Recommendation


# -- graph breaks (TTR501) -----------------------------------------------------
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
    runs = graph_runs(profile)
    sites = break_sites(profile)
    per_frame = collections.Counter(frame_of(b.compile_id) for b, _ in sites)
    out = []
    for b, logged in sites:
        frame = frames.get(frame_of(b.compile_id))
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
    users = user_paths(profile)
    return _break_findings(profile, {f.frame: f for f in frames}, users) + _recompile_findings(profile, frames, users)
