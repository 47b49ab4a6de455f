"""report.html's torch.compile section, and the evidence and fixes a runtime finding carries.

``compile_html`` renders report.json's ``compile`` block (new in 1.2): totals
(compile time is reported apart from the step) and one row per compiled frame.
``finding_more_html`` opens a runtime finding's ``evidence`` and
``recommendations`` under its message.
"""

from __future__ import annotations

from html import escape
from typing import Any

from .sections import loc, where


def compile_html(r: dict[str, Any]) -> str:
    """The torch.compile section; '' when the run compiled nothing."""
    c = r.get("compile")
    if not c:
        return ""
    window = f" {c['compile_ms_in_window']:.0f} ms of it fell inside the recorded steps and is left out of their times." if c["compile_ms_in_window"] else ""
    limit = " <strong>The recompile limit was hit</strong>: calls whose guards fail run eagerly." if c["recompile_limit_hit"] else ""
    rows = "".join(
        f"<tr><td>{escape(f['name'])}</td><td>{loc(f['call_path'], f['call_line']) if f['call_path'] else ''}</td>"
        f"<td class='num'>{f['compiles']}</td><td class='num'>{f['recompiles']}</td><td class='num'>{f['graph_breaks']}</td>"
        f"<td class='num'>{f['compile_time_s']:.2f}</td><td class='num'>{f['graph_runs_per_step']:g}</td>"
        f"<td>{'<br>'.join(escape(g) for g in f['failed_guards'])}</td></tr>"
        for f in c["frames"]
    )
    return (
        "<h2 id='compile'>torch.compile</h2>"
        f"<p>{c['compiles']} compiles took {c['compile_time_s']:.2f} s, counted apart from the step time.{window}"
        f" {c['recompiles']} recompiles, {c['graph_breaks']} graph breaks.{limit}</p>"
        "<table class='compile'><tr><th>compiled code</th><th>called at</th><th class='num'>compiles</th>"
        "<th class='num'>recompiles</th><th class='num'>graph breaks</th><th class='num'>compile s</th>"
        f"<th class='num'>graph runs / step</th><th>failed guards</th></tr>{rows}</table>"
    )


def finding_more_html(f: dict[str, Any]) -> str:
    """A runtime finding's evidence and fixes as a collapsible block ('' when it has none)."""
    evidence = f.get("evidence") or []
    recs = f.get("recommendations") or []
    if not evidence and not recs:
        return ""
    items = "".join(
        f"<li>{escape(e['text'])}"
        + (f" &mdash; {loc(e['path'], e['line'])}" if e.get("path") and where(e["path"], e["line"]) not in e["text"] else "")
        + "</li>"
        for e in evidence
    )
    fixes = "".join(
        f"<li><strong>{escape(x['action'])}</strong><div class='why'>{escape(x['why'])}</div>"
        + (f"<pre>{escape(x['example'])}</pre>" if x.get("example") else "")
        + "</li>"
        for x in recs
    )
    return (
        "<details class='finding-more'><summary>evidence and fixes</summary>"
        + (f"<ul class='evidence'>{items}</ul>" if items else "")
        + (f"<ol class='recs'>{fixes}</ol>" if fixes else "")
        + "</details>"
    )
