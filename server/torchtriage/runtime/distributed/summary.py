"""The terminal view of report.json's ``ranks`` section: one row per rank, stragglers, hints."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..results.profile_data import OK_STATUSES


def _pct(share: Any) -> str:
    return "-" if share is None else f"{share * 100:.0f}%"


def render_ranks(report: dict[str, Any]) -> RenderableType:
    """Per-rank table (step, busy, data loading, communication, overlap, status), then stragglers and DDP hints."""
    ranks = report["ranks"]
    traces = ranks.get("launcher") == "trace"
    where = "in the traces" if traces else "on this node"
    title = (f"Ranks {where} ({len(ranks['covered'])} of world size {ranks.get('world_size') or '?'}; "
             f"report shows rank {ranks.get('shown_rank')})")
    table = Table(title=title, title_justify="left", show_edge=False, box=None, pad_edge=False)
    for name in ("rank", "step ms", "busy ms", "data", "comm", "overlap", "bottleneck", "status"):
        table.add_column(name, justify="left" if name in ("bottleneck", "status") else "right")
    stragglers = {s["rank"] for s in ranks["stragglers"]}
    for entry in ranks["per_rank"]:
        status = entry["status"]["status"]
        style = "bold red" if entry["rank"] in stragglers else ""
        table.add_row(
            Text(f"{entry['rank']}" + (" *" if entry["rank"] in stragglers else ""), style=style),
            f"{entry['step_time_ms']:.1f}",
            "-" if entry["busy_ms"] is None else f"{entry['busy_ms']:.1f}",
            _pct(entry["data_loading_share"]),
            _pct(entry["communication_share"]),
            _pct(entry["communication"]["overlap"]),
            entry["bottleneck"].replace("_", " "),
            Text("ok" if status in OK_STATUSES else status, style="" if status in OK_STATUSES else "red"),
        )
    parts: list[RenderableType] = [Text(""), table, Text("  busy: step time minus the wait in collectives; data, comm: shares of the step "
                                                          "(data loading, waiting in collectives); overlap: of the time a collective was "
                                                          "in flight, the share spent on other work", style="dim")]
    for straggler in ranks["stragglers"]:
        parts.append(Text(f"  * {straggler['text']}", style="red"))
    if not ranks["stragglers"]:
        note = ranks["straggler_rule"].get("note") or "no rank is persistently slower than the others"
        parts.append(Text(f"  Stragglers: none ({note})", style="dim"))
    parts.append(Text(f"  {ranks['communication']['text']}", style="dim"))
    for hint in ranks["hints"]:
        parts.append(Text(f"  DDP: {hint['text']}", style="magenta"))
    failed = ranks.get("failed_rank")
    if failed is not None:
        parts.append(Text(f"  Rank {failed} failed first; its traceback is above and in rank{failed}/report.json", style="bold red"))
    files = "report.html and report.json" if traces else "report.html, report.json, trace.json.gz and agent.json"
    parts.append(Text(f"  rank<k>/ holds each rank's own {files}", style="dim"))
    if ranks.get("tensorboard_logdir"):
        parts.append(Text(f"  TensorBoard, one worker per rank: tensorboard --logdir {ranks['tensorboard_logdir']}", style="dim"))
    return Group(*parts)
