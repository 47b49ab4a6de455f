"""The "Ranks" section of report.html for a torchrun run (report.json ``ranks``; empty otherwise)."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from ...results.profile_data import OK_STATUSES
from .sections import href


def _pct(share: Any) -> str:
    return "&ndash;" if share is None else f"{share * 100:.0f}%"


def _links(entry: dict[str, Any], base: Path | None) -> str:
    links = []
    for key, label in (("html", "report"), ("trace", "trace"), ("agent_json", "agent.json")):
        if entry.get(key):
            links.append(f"<a href='{escape(href(entry[key], base))}'>{label}</a>")
    return " &middot; ".join(links)


def ranks_html(report: dict[str, Any], base: Path | None) -> str:
    """Per-rank table with links to each rank's own report and trace, stragglers, communication, DDP hints."""
    ranks = report.get("ranks")
    if not ranks:
        return ""
    stragglers = {s["rank"]: s for s in ranks["stragglers"]}
    rows = []
    for e in ranks["per_rank"]:
        status = e["status"]["status"]
        cls = " class='straggler'" if e["rank"] in stragglers else ""
        busy = "&ndash;" if e["busy_ms"] is None else f"{e['busy_ms']:.2f}"
        rows.append(
            f"<tr{cls}><td>{e['rank']}{' (shown)' if e['rank'] == ranks.get('shown_rank') else ''}</td>"
            f"<td class='num'>{e['step_time_ms']:.2f}</td><td class='num'>{busy}</td>"
            f"<td class='num'>{_pct(e['data_loading_share'])}</td><td class='num'>{_pct(e['communication_share'])}</td>"
            f"<td class='num'>{_pct(e['communication']['overlap'])}</td><td>{escape(e['bottleneck'].replace('_', ' '))}</td>"
            f"<td{'' if status in OK_STATUSES else ' class=status-bad'} title='{escape(e['status']['message'])}'>{escape(status)}</td>"
            f"<td>{_links(e, base)}</td></tr>"
        )
    out = (
        f"<h2 id='ranks'>Ranks ({len(ranks['covered'])} {'in the traces' if ranks.get('launcher') == 'trace' else 'on this node'}, "
        f"world size {escape(str(ranks.get('world_size')))})</h2>"
        "<table class='ranks'><tr><th>rank</th><th class='num'>step ms</th>"
        "<th class='num' title='step time minus the time spent waiting in collectives'>busy ms</th>"
        "<th class='num'>data loading</th><th class='num'>comm wait</th>"
        "<th class='num' title='share of the time a collective was in flight that this rank spent on other work'>overlap</th>"
        f"<th>bottleneck</th><th>status</th><th>files</th></tr>{''.join(rows)}</table>"
    )
    items = [f"<li class='straggler'>{escape(s['text'])}</li>" for s in ranks["stragglers"]]
    if not ranks["stragglers"]:
        items.append(f"<li>No straggler: {escape(ranks['straggler_rule'].get('note') or 'no rank is persistently slower than the others')}</li>")
    items.append(f"<li>{escape(ranks['communication']['text'])}</li>")
    items += [f"<li><strong>DDP:</strong> {escape(h['text'])}<pre>{escape(h['example'])}</pre></li>" for h in ranks["hints"]]
    if ranks.get("tensorboard_logdir"):
        items.append(f"<li>TensorBoard, one worker per rank: <code>tensorboard --logdir {escape(ranks['tensorboard_logdir'])}</code></li>")
    return out + f"<ul class='evidence'>{''.join(items)}</ul>"
