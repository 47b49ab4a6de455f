"""report.json's ``ranks`` section (new in 1.2): every rank of this node side by side.

Built from each rank's finished run (its ProfileData, agent.json and report), or
from each rank's analysed trace (``torchtriage analyze``, launcher ``trace``);
the straggler rule, the communication figures and the DDP hints come from
``stragglers``, ``comms`` and ``ddp``.  REPORT_SCHEMA.md documents the fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..diagnosis.bottleneck import category_shares
from ..results.profile_data import ProfileData, RunStatus
from .comms import RankComms, communication_summary, rank_comms
from .ddp import ddp_facts, ddp_hints
from .stragglers import NOISE_MS, NOISE_SHARE, PERSISTENT, RankSteps, find_stragglers


@dataclass(frozen=True)
class RankResult:
    """One rank after its own report was written into ``rank<k>/``."""

    rank: int
    folder: Path
    identity: dict[str, Any]  # agent.json meta.rank (empty when the rank wrote nothing)
    raw: dict[str, Any]  # agent.json ({} when absent)
    profile: ProfileData
    report: Optional[dict[str, Any]]
    status: RunStatus
    trace: Optional[Path] = None  # the rank's trace where it is not the folder's trace.json.gz (an analysed trace)


def _existing(path: Path) -> Optional[str]:
    return str(path) if path.exists() else None


def _rank_entry(result: RankResult, comms: RankComms, busy_ms: Optional[float]) -> dict[str, Any]:
    profile, identity, status = result.profile, result.identity, result.status
    shares = category_shares(profile) if profile.steps else {}
    bottleneck = (result.report or {}).get("bottleneck", {}).get("kind", "none")
    return {
        "rank": result.rank,
        "local_rank": identity.get("local_rank"),
        "node_rank": identity.get("node_rank"),
        "host": identity.get("host"),
        "pid": identity.get("pid"),
        "status": {"status": status.status, "message": status.message, "exit_code": status.exit_code, "traceback": status.traceback},
        "steps_profiled": profile.steps_profiled,
        "step_time_ms": round(profile.mean_step_us / 1000.0, 4),
        "busy_ms": None if busy_ms is None else round(busy_ms, 4),
        "step_times_ms": [round(s.duration_us / 1000.0, 4) for s in profile.steps],
        "breakdown": {c: round(v, 5) for c, v in shares.items()},
        "data_loading_share": round(shares.get("data_loading", 0.0), 5),
        "communication_share": comms.share,
        "communication": {
            "wait_ms": comms.wait_ms, "in_flight_ms": comms.in_flight_ms, "overlap": comms.overlap,
            "collectives_per_step": comms.collectives_per_step, "allreduces_per_step": comms.allreduces_per_step,
            "source": comms.source or None,
        },
        "bottleneck": bottleneck,
        "report": _existing(result.folder / "report.json"),
        "html": _existing(result.folder / "report.html"),
        "trace": str(result.trace) if result.trace is not None else _existing(result.folder / "trace.json.gz"),
        "agent_json": _existing(result.folder / "agent.json"),
    }


def ranks_section(results: list[RankResult], shown: Optional[RankResult], run_dir: Path, world: dict[str, Any],
                  failed_rank: Optional[int], launcher: str = "torchrun") -> dict[str, Any]:
    """The ``ranks`` object of the combined report.json; ``world``: world_size, nnodes, node_rank (and the
    backend when no DDP model says it); ``launcher``: "torchrun", or "trace" for ranks' analysed traces."""
    comms = {r.rank: rank_comms(r.rank, r.profile, r.raw) for r in results}
    verdict = find_stragglers([RankSteps.of(r.rank, r.profile) for r in results if r.profile.steps])
    straggling = [s.rank for s in verdict.stragglers]
    shown_comms = comms.get(shown.rank) if shown is not None else None
    facts = ddp_facts((shown.raw.get("meta") or {}).get("ddp"), shown_comms) if shown is not None and shown_comms else []
    tb = run_dir / "tb"
    return {
        "launcher": launcher,
        "world_size": world.get("world_size"),
        "nnodes": world.get("nnodes"),
        "node_rank": world.get("node_rank"),
        "covered": [r.rank for r in results],
        "shown_rank": shown.rank if shown is not None else None,
        "backend": next((f.get("backend") for f in facts if f.get("backend")), world.get("backend")),
        "per_rank": [_rank_entry(r, comms[r.rank], verdict.busy_ms.get(r.rank)) for r in results],
        "stragglers": [
            {"rank": s.rank, "gap_ms": s.gap_ms, "gap_share": s.gap_share, "slower_steps": s.slower_steps, "steps": s.steps,
             "category": s.category, "category_gap_ms": s.category_gap_ms, "text": s.text()}
            for s in verdict.stragglers
        ],
        "straggler_rule": {"persistent": round(PERSISTENT, 4), "noise_ms": NOISE_MS, "noise_share": NOISE_SHARE,
                           "matched_steps": verdict.matched_steps, "note": verdict.note},
        "communication": communication_summary([comms[r.rank] for r in results if r.profile.steps], straggling),
        "ddp": facts,
        "hints": ddp_hints(facts, shown_comms) if shown_comms is not None else [],
        "failed_rank": failed_rank,
        "tensorboard_logdir": str(tb) if tb.is_dir() else None,
    }
