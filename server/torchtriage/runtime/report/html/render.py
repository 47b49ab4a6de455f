"""report.json document -> one self-contained HTML page (inline CSS and SVG, no network).

The verdict, its evidence and fixes come first; then the step-time breakdown,
the hot lines as bars with their source and static codes, the operator table,
memory over steps, the tables (syncs, static and runtime findings) and the run
folder's files as links.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from string import Template
from types import MappingProxyType
from typing import Any

from ...results.profile_data import OK_STATUSES
from .comparison import comparison_html
from .compile_section import compile_html, finding_more_html
from .ranks import ranks_html
from .device import device_html
from .sections import base_dir, files_html, loc, operators_html, where
from .svg import Bar, bar_chart, color, line_chart, stacked_bar

TEMPLATE_PATH = Path(__file__).with_name("template.html")
KIND_TITLES = MappingProxyType(
    {
        "data_loading": "Data loading",
        "host_sync": "Host-device syncs",
        "python_overhead": "Python overhead",
        "launch_overhead": "Op launch / dispatch overhead",
        "compute": "Compute",
        "communication": "Communication",
        "memory_growth": "Memory growth",
        "optimizer": "Optimizer",
        "none": "No clear bottleneck",
    }
)
MIB = 2**20


def _verdict_html(v: dict[str, Any], primary: bool) -> str:
    kind = v["kind"]
    title = KIND_TITLES.get(kind, kind)
    share = v["share"]
    share_text = "" if kind == "none" else (
        f"{share * 100:.0f}% of memory added in the window" if kind == "memory_growth" else f"{share * 100:.0f}% of step time"
    )
    evidence = "".join(
        f"<li>{escape(e['text'])}{' &mdash; ' + loc(e['path'], e['line']) if e.get('path') and where(e['path'], e['line']) not in e['text'] else ''}</li>" for e in v["evidence"]
    )
    recs = "".join(
        f"<li><strong>{escape(r['action'])}</strong><div class='why'>{escape(r['why'])}</div>"
        + (f"<pre>{escape(r['example'])}</pre>" if r.get("example") else "")
        + "</li>"
        for r in v["recommendations"]
    )
    style = f"style='--kind-color:{color('memory' if kind == 'memory_growth' else kind)}'"
    if primary:
        return (
            f"<section class='card verdict' id='verdict' data-kind='{escape(kind)}' {style}>"
            f"<div><span class='kind'>{escape(title)}</span><span class='share'>{escape(share_text)}</span></div>"
            f"<ul class='evidence'>{evidence}</ul><h3>What to try, in order</h3><ol class='recs'>{recs}</ol></section>"
        )
    return (
        f"<div class='card secondary' data-kind='{escape(kind)}' {style}><span class='kind'>{escape(title)}</span> "
        f"<span class='why'>{escape(share_text)}</span><ul class='evidence'>{evidence}</ul><ol class='recs'>{recs}</ol></div>"
    )


def _header(r: dict[str, Any]) -> str:
    st = r["status"]
    meta = [
        f"device: {r['device']}" + (f" ({r['device_name']})" if r["device_name"] and r["device_name"] != r["device"] else ""),
        f"torch {r['torch_version']}",
        f"{r['steps_profiled']} steps profiled",
        f"mean step {r['step_time_ms']:.2f} ms",
        f"status: {st['status']}",
    ]
    repeats = r.get("repeats")
    if repeats and repeats["count"] > 1:
        spread = repeats["step_time_ms"]
        meta.append(f"median of {repeats['count']} runs ({spread['min']:.2f}\u2013{spread['max']:.2f} ms)")
    out = f"<h1>Why is {escape(Path(r['script']).name)} slow?</h1><div class='meta'>" + "".join(
        f"<span>{escape(m)}</span>" for m in meta
    ) + "</div>"
    if st["status"] not in OK_STATUSES or r["steps_profiled"] == 0:
        out += f"<p class='status-bad'>Run {escape(st['status'])}: {escape(st['message'] or 'no steps were profiled')}</p>"
    return out


def _breakdown(r: dict[str, Any]) -> str:
    parts = [(c, s, f"{r['breakdown_ms'][c]:.2f} ms") for c, s in r["breakdown"].items() if s > 0]
    if not parts:
        return "<h2>Where a step goes</h2><p class='empty'>No step time recorded.</p>"
    steps = r["step_times_ms"]
    chart = stacked_bar(parts)
    step_chart = line_chart([("step time", "#2e86ab", steps)], [str(i) for i in range(len(steps))], "ms", height=190, y_title="step time")
    return f"<h2>Where a step goes ({r['step_time_ms']:.2f} ms mean)</h2>{chart}<h2>Step times</h2>{step_chart}"


def _hotlines(r: dict[str, Any]) -> str:
    bars = [
        Bar(
            label=where(h["path"], h["line"]),
            value=h["share"],
            value_text=f"{h['self_ms_per_step']:.2f} ms \u00b7 {h['share'] * 100:.0f}%",
            category=h["category"],
            note=h["source"],
            badges=tuple(h["static_codes"]),
            title=h["path"],
        )
        for h in r["hotspots"][:10]
    ]
    return "<h2>Hot lines (time per step)</h2>" + bar_chart(bars)


def _mib(n: float) -> str:
    """Bytes as MiB: two decimals, three below 0.1 MiB, "<0.001" below that."""
    mib = n / MIB
    if mib == 0 or abs(mib) >= 0.1:
        return f"{mib:,.2f}"
    return f"{mib:.3f}" if abs(mib) >= 0.001 else "&lt;0.001"


def _mib_cell(n: int) -> str:
    return f"<td class='num' title='{n:,} bytes'>{_mib(n)}</td>"


MEMORY_CAPTION = (
    "Live allocated memory: the bytes held by tensors that PyTorch's allocator has handed out (its "
    "<em>allocated</em> memory, not the cache it keeps <em>reserved</em>). <strong>peak</strong> is the highest value "
    "reached during each step, <strong>end</strong> what was still allocated when the step finished."
)
ALLOCATED_HELP = (
    "Sum of every allocation this line made over the recorded steps. Memory freed and allocated again counts each "
    "time, so this is not live memory and can exceed the peak."
)
RETAINED_HELP = "Bytes this line allocated during the recorded steps that were still held (not freed) at the end of them."


def _memory(r: dict[str, Any]) -> str:
    m = r["memory"]
    steps = m["steps"]
    out = "<h2>Memory over steps</h2>"
    if not steps:
        return out + "<p class='empty'>No memory events recorded.</p>"
    out += line_chart(
        [
            ("peak during the step", color("memory"), [s["peak_bytes"] / MIB for s in steps]),
            ("allocated at step end", color("compute"), [s["end_bytes"] / MIB for s in steps]),
        ],
        [str(s["step"]) for s in steps],
        "MiB",
        zero_based=False,
        y_title="live allocated memory",
    )
    out += f"<p class='caption'>{MEMORY_CAPTION}</p>"
    out += (
        f"<p>Peak {_mib(m['peak_bytes'])} MiB live; growth {m['growth_bytes_per_step'] / MIB:+.3f} MiB per step at step end "
        f"(R&sup2; {m['fit_r2']:.2f}) &mdash; {'<strong>steady growth</strong>' if m['steady_growth'] else 'no steady growth'}.</p>"
    )
    rows = "".join(
        f"<tr><td>{loc(t['path'], t['line'])}</td><td><code>{escape(t['source'])}</code></td>"
        f"{_mib_cell(t['allocated_bytes'])}{_mib_cell(t['retained_bytes'])}</tr>"
        for t in m["top_lines"][:5]
    )
    if rows:
        out += (
            "<table class='memlines'><tr><th>line</th><th>source</th>"
            f"<th class='num' title='{escape(ALLOCATED_HELP)}'>allocated over the window (MiB)</th>"
            f"<th class='num' title='{escape(RETAINED_HELP)}'>still held at the end (MiB)</th></tr>{rows}</table>"
            f"<p class='caption'><strong>allocated over the window</strong>: {escape(ALLOCATED_HELP)} "
            f"<strong>still held at the end</strong> (retained): {escape(RETAINED_HELP)}</p>"
        )
    if m.get("snapshot"):
        out += f"<p>Memory snapshot: <code>{escape(m['snapshot'])}</code> (open at pytorch.org/memory_viz)</p>"
    return out


def _tables(r: dict[str, Any]) -> str:
    out = ""
    if r["sync_points"]:
        rows = "".join(
            f"<tr><td>{loc(s['path'], s['line'])}</td><td><code>{escape(s['source'])}</code></td><td>{escape(s['kind'])}</td>"
            f"<td>{s['per_step']:g}</td><td>{s['stall_ms_per_step']:.3f}</td></tr>"
            for s in r["sync_points"]
        )
        out += f"<h2>Sync points</h2><table class='syncs'><tr><th>line</th><th>source</th><th>kind</th><th>per step</th><th>blocked ms/step</th></tr>{rows}</table>"
    here = [f for f in r["static_findings"] if f.get("applies_on_this_device", True)]
    elsewhere = [f for f in r["static_findings"] if not f.get("applies_on_this_device", True)]
    if r["runtime_findings"] or here:
        rows = "".join(
            f"<tr><td><span class='code rcode'>{escape(f['code'])}</span></td><td>{loc(f['path'], f['line'])}</td>"
            f"<td>{f['share'] * 100:.1f}%</td><td>{escape(f['message'])}{finding_more_html(f)}</td></tr>"
            for f in r["runtime_findings"]
        )
        rows += "".join(
            f"<tr><td><span class='code'>{escape(f['code'])}</span></td><td>{loc(f['path'], f['line'])}</td>"
            f"<td>{f['line_share'] * 100:.1f}%" + (f" (category {f['category_share'] * 100:.0f}%)" if f["category_share"] else "")
            + f"</td><td>{escape(f['message'])}</td></tr>"
            for f in here
        )
        out += f"<h2>Findings and their cost</h2><table class='findings'><tr><th>code</th><th>line</th><th>share of step</th><th>message</th></tr>{rows}</table>"
    if elsewhere:
        # CUDA-only hazards on a CPU run cost nothing here: no share, only what they would mean on a GPU.
        items = "".join(
            f"<li><span class='code'>{escape(f['code'])}</span> {loc(f['path'], f['line'])}: {escape(f['message'])}</li>"
            for f in elsewhere
        )
        out += (
            "<h2>On a GPU these would also matter</h2><p class='note'>This run was on the CPU, where these CUDA-only "
            f"findings cost nothing, so they carry no share of the step.</p><ul class='gpu-only'>{items}</ul>"
        )
    return out


def _footer(r: dict[str, Any]) -> str:
    warnings = "".join(f"<div>warning: {escape(w)}</div>" for w in r["warnings"])
    return f"<footer>{warnings}<div>{escape(r['generated_by'])} &middot; report schema {escape(r['schema_version'])}</div></footer>"


def render_html(report: dict[str, Any], run_dir: Path | None = None, comparison: dict[str, Any] | None = None) -> str:
    """The whole page for one report.json document.

    ``run_dir`` is the folder report.html goes into (links to the run's files are
    relative to it); by default it is inferred from the paths in the report.
    ``comparison``: a compare.json document with this run as the newer one, shown
    as a "Compared with <run>" section under the verdict.
    """
    base = run_dir if run_dir is not None else base_dir(report)
    body = "".join(
        [
            _header(report),
            _verdict_html(report["bottleneck"], primary=True),
            comparison_html(comparison, base) if comparison else "",
            "".join(_verdict_html(v, primary=False) for v in report["secondary"]),
            ranks_html(report, base),
            _breakdown(report),
            _hotlines(report),
            operators_html(report),
            _memory(report),
            compile_html(report),
            device_html(report),
            _tables(report),
            files_html(report, base),
            _footer(report),
        ]
    )
    page = Template(TEMPLATE_PATH.read_text(encoding="utf-8"))
    return page.substitute(
        title=escape(f"torchtriage: {Path(report['script']).name}"), generator=escape(report["generated_by"]), body=body
    )
