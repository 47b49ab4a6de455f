"""Static findings <-> hot lines: what each finding costs, and what the linter missed.

Two directions:

* ``StaticLink``: every static finding with the time charged to the lines its
  span covers (``line_share``) and, for findings whose rule category is a
  runtime category (data_loading, host_sync, ...), that category's share of the
  step (``category_share``): a TT302 sits on the ``DataLoader(...)`` line, which
  costs nothing itself, while the loading it causes is the whole category.
  Hot lines get the codes of the findings that cover them (``static_codes``).
  The verdict's evidence quotes the findings of its category.
* Runtime findings: hazards the profile shows on a line where the linter has
  no finding of the matching category.  They are ordinary ``Finding`` objects
  (editors can show them like static ones) with these stable codes:

  ======== ==================== ============================================
  TTR101   runtime-host-sync    a measured sync point (.item(), .cpu(), ...)
  TTR201   runtime-memory-kept  memory grows steadily; allocated here, kept
  TTR302   runtime-loader-bound data loading >= 30% of the step, no TT302 and no
                                data-loading finding on its hottest line
  TTR501   runtime-graph-break  a torch.compile graph break (compile_findings)
  TTR502   runtime-recompile    a compiled function recompiled (compile_findings)
  TTR503   runtime-dtype-churn  ops mixing float dtypes, casts back (dtype_findings)
  ======== ==================== ============================================

  The device's work (``device_findings``): TTR601 runtime-tensor-core-shape,
  TTR602 runtime-fp32-matmul-no-tf32, TTR603 runtime-attention-not-sdpa,
  TTR604 runtime-gpu-idle-gap, TTR701 runtime-memory-shape, TTR702
  runtime-memory-fragmentation.  TensorBoard's Overview rules and torch's
  profiler pattern matcher (``patterns``): TTR303, TTR304, TTR305, TTR306,
  TTR401-TTR403, TTR504, TTR507, TTR509, TTR605, TTR606, TTR703.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Sequence

from ...findings import Finding, Severity, Span
from ..results.profile_data import ProfileData, SyncPoint
from ..results.verdicts import Evidence, Hotspot, MemoryTrend, StaticLink

RUNTIME_CODES = {
    "TTR101": "runtime-host-sync",
    "TTR201": "runtime-memory-kept",
    "TTR302": "runtime-loader-bound",
    "TTR303": "runtime-loader-in-process",
    "TTR304": "runtime-loader-wait",
    "TTR305": "runtime-tensor-created-then-moved",
    "TTR306": "runtime-indexing-loop",
    "TTR401": "runtime-data-parallel",
    "TTR402": "runtime-ddp-without-nccl",
    "TTR403": "runtime-communication-share",
    "TTR501": "runtime-graph-break",
    "TTR502": "runtime-recompile",
    "TTR503": "runtime-dtype-churn",
    "TTR504": "runtime-optimizer-single-tensor",
    "TTR507": "runtime-zero-grad-fills",
    "TTR509": "runtime-conv-bias-before-batchnorm",
    "TTR601": "runtime-tensor-core-shape",
    "TTR602": "runtime-fp32-matmul-no-tf32",
    "TTR603": "runtime-attention-not-sdpa",
    "TTR604": "runtime-gpu-idle-gap",
    "TTR605": "runtime-gpu-underused",
    "TTR606": "runtime-no-tensor-cores",
    "TTR701": "runtime-memory-shape",
    "TTR702": "runtime-memory-fragmentation",
    "TTR703": "runtime-memory-near-limit",
}
# Categories of the static rules known when this was written; the rule
# registry is asked first, so new rules only need their ``category``.
KNOWN_CATEGORIES = {
    "TT101": "host_sync",
    "TT102": "host_sync",
    "TT103": "host_sync",
    "TT104": "host_sync",
    "TT201": "memory",
    "TT202": "memory",
    "TT301": "data_loading",
    "TT302": "data_loading",
    "TT303": "data_loading",
}
LOADER_BOUND_SHARE = 0.30  # same bar as the data_loading verdict
LOUD_SHARE = 0.05  # runtime findings at or above this share of the step are warnings


def _rule(code: str):  # type: ignore[no-untyped-def]
    """The static rule class for a code, or None (a broken rule module must not break a report)."""
    try:
        from ...analysis.rules import rule_by_code

        return rule_by_code(code)
    except Exception:
        return None


def rule_category(code: str) -> str:
    """The rule's category from the registry, else from KNOWN_CATEGORIES."""
    return getattr(_rule(code), "category", "") or KNOWN_CATEGORIES.get(code.upper(), "")


def finding_category(finding: Finding) -> str:
    """A finding's rule category: the one it carries (``hot_findings.findings_in`` sets it), else
    :func:`rule_category` (which loads the rule registry)."""
    return finding.extra.get("category") or rule_category(finding.code)


def normalize_path(path: str, cwd: str) -> str:
    """Absolute, symlink-resolved, case-normalised path (relative ones against ``cwd``)."""
    if not path:
        return ""
    full = path if os.path.isabs(path) else os.path.join(cwd or os.getcwd(), path)
    return os.path.normcase(os.path.realpath(full))


def covers(finding: Finding, path: str, line: int, cwd: str) -> bool:
    """True when the finding is in ``path`` and its span's lines include ``line``."""
    if normalize_path(finding.path, cwd) != normalize_path(path, cwd):
        return False
    return finding.span.line <= line <= max(finding.span.line, finding.span.end_line)


def _line_times(profile: ProfileData) -> dict[tuple[str, int], float]:
    times: dict[tuple[str, int], float] = {}
    for cost in profile.lines:
        key = (normalize_path(cost.path, profile.cwd), cost.line)
        times[key] = times.get(key, 0.0) + cost.self_us
    return times


def static_links(profile: ProfileData, findings: Iterable[Finding], shares: dict[str, float]) -> list[StaticLink]:
    """Each finding with its runtime cost, most expensive first.

    A CUDA-only rule (``requires_cuda``: a blocking host-to-device copy, no pinned
    memory...) on a CPU run costs nothing here: it gets no time and no category share,
    and ``applies_on_this_device`` False, so no report reads it as part of the step."""
    times = _line_times(profile)
    total = sum(s.duration_us for s in profile.steps)
    n = max(1, profile.steps_profiled)
    links = []
    for f in findings:
        path = normalize_path(f.path, profile.cwd)
        end = max(f.span.line, f.span.end_line)
        applies = not (profile.device != "cuda" and _finding_cuda_only(f))
        us = sum(times.get((path, line), 0.0) for line in range(f.span.line, end + 1)) if applies else 0.0
        category = finding_category(f)
        links.append(
            StaticLink(
                code=f.code,
                name=f.name,
                path=f.path,
                line=f.span.line,
                end_line=end,
                message=f.message,
                category=category,
                self_us_per_step=us / n,
                line_share=min(1.0, us / total) if total > 0 else 0.0,
                category_share=shares.get(category, 0.0) if applies else 0.0,
                applies_on_this_device=applies,
            )
        )
    links.sort(key=lambda k: (not k.applies_on_this_device, -k.line_share, -k.category_share, k.path, k.line, k.code))
    return links


def _runtime_finding(
    code: str, path: str, line: int, message: str, share: float, us_per_step: float, loud: bool = False
) -> Finding:
    return Finding(
        path=path,
        span=Span(line, 1, line + 1, 1),
        code=code,
        name=RUNTIME_CODES[code],
        severity=Severity.WARNING if loud or share >= LOUD_SHARE else Severity.INFO,
        message=message,
        extra={"share": share, "self_ms_per_step": us_per_step / 1000.0, "source": "runtime"},
    )


def _has(findings: Sequence[Finding], category: str, path: str, line: int | None, cwd: str) -> bool:
    """Whether a finding of ``category`` covers (path, line); ``line=None``: anywhere."""
    for f in findings:
        if finding_category(f) != category:
            continue
        if line is None or covers(f, path, line, cwd):
            return True
    return False


def runtime_findings(
    profile: ProfileData,
    findings: Sequence[Finding],
    breakdown: dict[str, float],
    hotspots: Sequence[Hotspot],
    sync_points: Sequence[SyncPoint],
    memory: MemoryTrend,
) -> list[Finding]:
    """Hazards seen at runtime with no matching static finding (codes in RUNTIME_CODES)."""
    cwd = profile.cwd
    total = sum(s.duration_us for s in profile.steps)
    n = max(1, profile.steps_profiled)
    out: list[Finding] = []
    for sp in sync_points:
        if sp.path and not _has(findings, "host_sync", sp.path, sp.line, cwd):
            share = min(1.0, sp.stall_us / total) if total > 0 else 0.0
            out.append(
                _runtime_finding(
                    "TTR101",
                    sp.path,
                    sp.line,
                    f"{sp.kind} sync measured here {sp.count / n:.1f}x per step "
                    f"({sp.stall_us / n / 1000:.2f} ms blocked per step){' via ' + sp.op if sp.op else ''}; "
                    "keep the value on the device and read it every N steps",
                    share,
                    sp.stall_us / n,
                )
            )
    data_share = breakdown.get("data_loading", 0.0)
    has_loader_rule = any(f.code.upper() == "TT302" for f in findings)
    loader_lines = [h for h in hotspots if h.category == "data_loading"]
    # A data-loading finding on the hottest loading line (TT306's per-element loop) already names the cause.
    explained = bool(loader_lines) and _has(findings, "data_loading", loader_lines[0].path, loader_lines[0].line, cwd)
    if data_share >= LOADER_BOUND_SHARE and not has_loader_rule and not explained and loader_lines:
        top = loader_lines[0]
        out.append(
            _runtime_finding(
                "TTR302",
                top.path,
                top.line,
                loader_bound_message(profile, data_share, os.path.isfile(normalize_path(top.path, cwd))),
                data_share,
                data_share * profile.mean_step_us,
            )
        )
    if memory.steady_growth:
        for ml in memory.top_lines[:1]:
            if ml.retained_bytes > 0 and not _has(findings, "memory", ml.path, ml.line, cwd):
                out.append(
                    _runtime_finding(
                        "TTR201",
                        ml.path,
                        ml.line,
                        f"memory grows {memory.growth_bytes_per_step / 2**20:.2f} MiB per step; "
                        f"{ml.retained_bytes / 2**20:.2f} MiB allocated here is still held: detach or drop it",
                        0.0,
                        0.0,
                        loud=True,
                    )
                )
    return out


def loader_bound_message(profile: ProfileData, share: float, checked: bool) -> str:
    """TTR302's message, true to what is known: the run's num_workers (0 is known from the loader's iterator) and
    whether the static check ran (``checked``: the line's source file was found; a trace recorded elsewhere may
    name files this machine does not have, and then nothing was checked)."""
    workers = profile.loader_workers
    head = f"data loading takes {share * 100:.0f}% of the step"
    if workers == 0:
        static = ("; the static check did not flag the DataLoader (its num_workers may come from a variable or a config)"
                  if checked else "; the script's source was not found, so no static check ran")
        return (head + " with num_workers=0: the DataLoader builds every batch in the training process" + static
                + ": give it worker processes, then look at this line's per-sample cost")
    said = f" with num_workers={workers}" if workers is not None else ""
    if checked:
        return head + said + "; the static check saw no DataLoader without workers, so look at this line's per-sample cost"
    return (head + said + "; the script's source was not found, so no static check ran: check the DataLoader's num_workers"
            + " and this line's per-sample cost")


def _cuda_only(code: str) -> bool:
    """Whether a static rule is about CUDA (its hazard costs nothing on a CPU run)."""
    return bool(getattr(_rule(code), "requires_cuda", False))


def _finding_cuda_only(finding: Finding) -> bool:
    """:func:`_cuda_only` for a finding, from the fact it carries when it has it (``hot_findings.findings_in``)."""
    carried = finding.extra.get("requires_cuda")
    return carried if isinstance(carried, bool) else _cuda_only(finding.code)


MEANINGFUL_LINE_SHARE = 0.01  # below this a line "costs" nothing worth quoting


def link_evidence(links: list[StaticLink], kind: str, device: str = "cuda", limit: int = 3) -> list[Evidence]:
    """Static findings of the verdict's category as evidence ("TT101 at train.py:45 costs 38% of step time").

    Costly lines first, then the findings that point at the cause; one entry per
    (code, line); CUDA-only rules are left out of a CPU run, where they cost nothing.
    """
    category = "memory" if kind == "memory_growth" else kind
    relevant = [k for k in links if k.category == category and k.applies_on_this_device and not (device == "cpu" and _cuda_only(k.code))]
    relevant.sort(key=lambda k: (k.line_share < MEANINGFUL_LINE_SHARE, -k.line_share, k.path, k.line, k.code))
    out: list[Evidence] = []
    seen: set[tuple[str, str, int]] = set()
    for k in relevant:
        if (k.code, k.path, k.line) in seen:
            continue
        seen.add((k.code, k.path, k.line))
        where = f"{Path(k.path).name}:{k.line}"
        if k.line_share >= MEANINGFUL_LINE_SHARE:
            text = f"{k.code} at {where} costs {k.line_share * 100:.0f}% of step time ({k.self_us_per_step / 1000:.2f} ms per step)"
        else:
            text = f"{k.code} at {where} points at the cause: {k.message}"
        out.append(Evidence(text, k.path, k.line))
        if len(out) == limit:
            break
    return out


def line_codes(hotspots: Sequence[Hotspot], findings: Sequence[Finding], cwd: str) -> list[Hotspot]:
    """The hot lines again, each with the codes of the static findings that cover it."""
    return [replace(spot, static_codes=sorted({f.code for f in findings if covers(f, spot.path, spot.line, cwd)})) for spot in hotspots]
