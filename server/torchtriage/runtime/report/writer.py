"""report.json and report.html for one profiled run.

``build_report(profile, diagnosis, run_dir)`` turns the diagnosis into the
JSON document described in REPORT_SCHEMA.md and validated by
``report_schema.json`` (shipped beside this module).  ``write_reports`` is the
one call the CLI needs after a run: diagnose, write both files, return paths.
The HTML and the terminal summary render from the JSON document only, so a
report can be re-rendered from report.json alone.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ... import __version__
from ...findings import Finding
from ..diagnosis.compile_frames import compile_report
from .device_sections import device_sections
from ..diagnosis.bottleneck import Diagnosis, Verdict, diagnose
from ..diagnosis.runtime_finding import finding_extras_json
from ..results.profile_data import CATEGORIES, ProfileData
from .range_table import range_sections
from .shape_table import shape_sections
from .source_texts import source_texts

# 1.1 added operators, breakdown_spread, withheld_verdicts, applies_on_this_device, trace links;
# 1.2 added created, sources (the files' text, for matching lines across edits) and repeats; and ranks (multi-process runs);
# and compile (torch.compile), runtime findings' evidence / recommendations / details, TTR501-TTR503
# device_facts, matmul_shapes, memory_shape, gpu_idle_gaps, TTR601-TTR604, TTR701-TTR702
SCHEMA_VERSION = "1.3"
SCHEMA_PATH = Path(__file__).with_name("report_schema.json")
REPORT_JSON = "report.json"
REPORT_HTML = "report.html"
PROFILE_JSON = "profile.json"
AGENT_JSON = "agent.json"
OPERATORS = 50  # rows of report.json's operator table
TRACE_PATTERNS = ("*.pt.trace.json", "*.pt.trace.json.gz", "trace*.json", "trace*.json.gz")


@dataclass(frozen=True)
class ReportPaths:
    """Where write_reports put its files, and the report.json payload it wrote."""

    json: Path
    html: Path
    report: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def load_schema() -> dict[str, Any]:
    """The JSON schema every report.json satisfies."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


class SourceLines:
    """Reads source lines for snippets, each file once; missing files give ''."""

    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}

    def get(self, path: str, line: int) -> str:
        if path not in self._files:
            try:
                self._files[path] = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                self._files[path] = []
        lines = self._files[path]
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _ms(us: float) -> float:
    return round(us / 1000.0, 4)


def _share(x: float) -> float:
    return round(x, 5)


def _verdict(v: Verdict) -> dict[str, Any]:
    return {
        "kind": v.kind,
        "share": _share(v.share),
        "evidence": [{"text": e.text, "path": e.path or None, "line": e.line or None} for e in v.evidence],
        "recommendations": [{"action": r.action, "why": r.why, "example": r.example} for r in v.recommendations],
    }


def _trace_files(profile: ProfileData, run_dir: Path | None) -> dict[str, Any]:
    extra = profile.extra
    traces: list[str] = []
    for key in ("trace", "chrome_trace", "trace_files", "traces"):
        value = extra.get(key)
        traces += [value] if isinstance(value, str) else [str(v) for v in value or [] if isinstance(v, str)]
    if run_dir is not None and run_dir.is_dir():
        for pattern in TRACE_PATTERNS:
            traces += [str(p) for p in sorted(run_dir.glob(pattern))]
    profile_json = run_dir / PROFILE_JSON if run_dir is not None else None
    agent_json = run_dir / AGENT_JSON if run_dir is not None else None
    return {
        "chrome_traces": list(dict.fromkeys(traces)),
        "profile": str(profile_json) if profile_json is not None and profile_json.exists() else None,
        "memory_snapshot": str(extra.get("memory_snapshot")) if extra.get("memory_snapshot") else None,
        "tensorboard_logdir": _existing(extra.get("tensorboard_logdir")),
        "output_log": _existing(extra.get("output_log")),
        "agent_json": str(agent_json) if agent_json is not None and agent_json.exists() else None,
    }


def _existing(path: Any) -> str | None:
    return str(path) if isinstance(path, str) and path and Path(path).exists() else None


def _operators(profile: ProfileData, step_us: float, src: SourceLines) -> list[dict[str, Any]]:
    """The operator table: per op name, per step, largest self time first."""
    n = max(1, profile.steps_profiled)
    window = step_us * n
    return [
        {
            "name": o.name,
            "device": o.device,
            "main_thread": o.main_thread,
            "calls_per_step": round(o.calls / n, 3),
            "self_ms_per_step": _ms(o.self_us / n),
            "total_ms_per_step": _ms(o.total_us / n),
            "self_share": _share(o.self_us / window) if window > 0 else 0.0,
            "total_share": _share(o.total_us / window) if window > 0 else 0.0,
            "path": o.path or None,
            "line": o.line or None,
            "function": o.function,
            "source": src.get(o.path, o.line) if o.path else "",
        }
        for o in sorted(profile.ops, key=lambda o: (-o.self_us, -o.total_us, o.name))[:OPERATORS]
    ]


def _source_paths(profile: ProfileData, diagnosis: Diagnosis) -> list[str]:
    """The files whose text report.json keeps: the script, then those of the hot lines and static findings."""
    return [profile.script] + [h.path for h in diagnosis.hotspots] + [k.path for k in diagnosis.static_links]


def build_report(
    profile: ProfileData,
    diagnosis: Diagnosis,
    run_dir: Path | None = None,
    repeats: dict[str, Any] | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    """The report.json document (see REPORT_SCHEMA.md); ``repeats`` when the run is one of a ``--repeat``
    series, ``created`` the time it is written (ISO 8601)."""
    src = SourceLines()
    n = max(1, profile.steps_profiled)
    step_us = diagnosis.step_us
    mem = diagnosis.memory
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"torchtriage {__version__}",
        "script": profile.script,
        "argv": list(profile.argv),
        "cwd": profile.cwd,
        "user_roots": list(profile.user_roots),
        "device": profile.device,
        "device_name": profile.device_name,
        "torch_version": profile.torch_version,
        "python": profile.python,
        "status": {
            "status": profile.status.status,
            "message": profile.status.message,
            "exit_code": profile.status.exit_code,
            "traceback": profile.status.traceback,
        },
        "step_detection": profile.step_detection,
        "steps_profiled": profile.steps_profiled,
        "window": profile.window,
        "step_time_ms": _ms(step_us),
        "step_times_ms": [_ms(s.duration_us) for s in profile.steps],
        "breakdown": {c: _share(diagnosis.breakdown.get(c, 0.0)) for c in CATEGORIES},
        "breakdown_ms": {c: _ms(diagnosis.breakdown.get(c, 0.0) * step_us) for c in CATEGORIES},
        "bottleneck": _verdict(diagnosis.bottleneck),
        "secondary": [_verdict(v) for v in diagnosis.secondary],
        "withheld_verdicts": [
            {"kind": w.kind, "share": _share(w.share), "steps_at_bar": w.steps_at_bar, "steps": w.steps, "reason": w.reason}
            for w in diagnosis.withheld
        ],
        "breakdown_spread": {c: {k: _share(v) for k, v in q.items()} for c, q in diagnosis.breakdown_spread.items()},
        "hotspots": [
            {
                "path": h.path,
                "line": h.line,
                "function": h.function,
                "source": src.get(h.path, h.line),
                "self_ms_per_step": _ms(h.self_us_per_step),
                "share": _share(h.share),
                "category": h.category,
                "top_names": h.top_names,
                "detail": h.detail,
                "static_codes": h.static_codes,
            }
            for h in diagnosis.hotspots
        ],
        "memory": {
            "peak_bytes": mem.peak_bytes,
            "growth_bytes_per_step": round(mem.growth_bytes_per_step, 1),
            "fit_r2": round(mem.fit_r2, 4),
            "steady_growth": mem.steady_growth,
            "steps": [{"step": m.step, "peak_bytes": m.peak_bytes, "end_bytes": m.end_bytes} for m in mem.steps],
            "top_lines": [
                {
                    "path": m.path,
                    "line": m.line,
                    "source": src.get(m.path, m.line),
                    "allocated_bytes": m.allocated_bytes,
                    "retained_bytes": m.retained_bytes,
                }
                for m in mem.top_lines
            ],
            "snapshot": mem.snapshot or None,
            **_device_memory(profile, mem.peak_bytes),
        },
        "sync_points": [
            {
                "path": s.path,
                "line": s.line,
                "source": src.get(s.path, s.line),
                "kind": s.kind,
                "op": s.op,
                "count": s.count,
                "per_step": round(s.count / n, 3),
                "stall_ms_per_step": _ms(s.stall_us / n),
            }
            for s in diagnosis.sync_points
        ],
        "static_findings": [
            {
                "code": k.code,
                "name": k.name,
                "path": k.path,
                "line": k.line,
                "end_line": k.end_line,
                "category": k.category,
                "message": k.message,
                "self_ms_per_step": _ms(k.self_us_per_step),
                "line_share": _share(k.line_share),
                "category_share": _share(k.category_share),
                "applies_on_this_device": k.applies_on_this_device,
            }
            for k in diagnosis.static_links
        ],
        "runtime_findings": [_runtime_finding_json(f) for f in diagnosis.runtime_findings],
        "ops_per_step": round(profile.ops_per_step, 2),
        "kernels_per_step": round(profile.kernels_per_step, 2),
        "loader_workers": profile.loader_workers,
        "warnings": list(profile.warnings),
        "trace": _trace_files(profile, run_dir),
        "operators": _operators(profile, step_us, src),
        "created": created,
        "sources": source_texts(_source_paths(profile, diagnosis)),
        "repeats": repeats,
        "compile": compile_report(profile),
        **device_sections(profile, src),
        **_trace_analysis(profile),
        **shape_sections(profile),
        **range_sections(profile),
    }


def _device_memory(profile: ProfileData, peak: int) -> dict[str, Any]:
    """``device_total_bytes`` (the GPU's memory: the allocator's figure on a profiled run, ``deviceProperties``'
    ``totalGlobalMem`` in a trace; null when unknown) and the peak's share of it."""
    total = profile.device_facts.total_bytes if profile.device_facts is not None else 0
    return {"device_total_bytes": total or None, "peak_share_of_device": round(peak / total, 4) if total > 0 else None}


def _trace_analysis(profile: ProfileData) -> dict[str, Any]:
    """``source`` and ``gpu_busy`` of a run made from a recorded trace (``torchtriage analyze``); absent for a profiled run."""
    return {key: profile.extra[key] for key in ("source", "gpu_busy") if isinstance(profile.extra.get(key), dict)}


def _runtime_finding_json(f: Finding) -> dict[str, Any]:
    data = f.to_json()
    data["share"] = _share(float(f.extra.get("share", 0.0)))
    data["self_ms_per_step"] = round(float(f.extra.get("self_ms_per_step", 0.0)), 4)
    data.update(finding_extras_json(f))
    return data


def write_reports(
    profile: ProfileData, run_dir: Path, static_findings: Sequence[Finding] = (), repeats: dict[str, Any] | None = None
) -> ReportPaths:
    """Diagnose ``profile`` and write report.json + report.html into ``run_dir``."""
    from .html import render_html

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    report = build_report(profile, diagnose(profile, static_findings), run_dir, repeats, now)
    paths = ReportPaths(run_dir / REPORT_JSON, run_dir / REPORT_HTML, report)
    paths.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    paths.html.write_text(render_html(report, run_dir), encoding="utf-8")
    return paths


def load_report(path: Path) -> dict[str, Any]:
    """Read a report.json (a folder is taken as the run folder)."""
    path = Path(path)
    if path.is_dir():
        path = path / REPORT_JSON
    return json.loads(path.read_text(encoding="utf-8"))
