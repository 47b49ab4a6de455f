"""Helpers for the compare tests: run folders written by the real report pipeline from a chosen profile.

``write_run`` saves a script, builds a ProfileData whose steps and line costs are
given (the agent's part, which the real-run tests exercise), and writes the run
folder with ``write_outputs``: static findings of the script, report.json (with
the script's text), report.html — everything ``torchtriage compare`` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchtriage.runtime.results.profile_data import CATEGORIES, LineCost, MemoryStep, ProfileData, RunStatus, StepTiming
from torchtriage.runtime.profiling.finish import write_outputs

LOADER_SCRIPT = '''\
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __len__(self):
        return 800

    def __getitem__(self, index):
        time.sleep(0.006)
        return torch.full((256,), float(index % 7)), torch.tensor(index % 10)


model = torch.nn.Linear(256, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Samples(), batch_size=8, num_workers=WORKERS)
INSERTED
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def loader_script(workers: int, inserted: str = "") -> str:
    """The loader-bound script with ``num_workers`` set, and optional lines above its loop."""
    return LOADER_SCRIPT.replace("WORKERS", str(workers)).replace("INSERTED\n", inserted)


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def write_run(
    run_dir: Path,
    script: Path,
    text: str,
    steps_ms: list[float],
    shares: dict[str, float],
    lines: dict[str, tuple[str, float]],
    peak_bytes: int = 10 * 2**20,
    ops_per_step: float = 60.0,
    repeats: dict[str, Any] | None = None,
    status: RunStatus | None = None,
) -> dict[str, Any]:
    """Write ``text`` to ``script`` and a run folder whose steps take ``steps_ms``, split by ``shares``
    in every step, with ``lines``: source fragment -> (category, ms per step).  Returns report.json."""
    script.write_text(text, encoding="utf-8")
    steps, t = [], 0.0
    for i, ms in enumerate(steps_ms):
        steps.append(StepTiming(i, t, t + ms * 1000))
        t += ms * 1000
    total = sum(steps_ms) * 1000
    n = len(steps_ms)
    profile = ProfileData(
        script=str(script), argv=[str(script)], cwd=str(script.parent), device="cpu", device_name="cpu",
        torch_version="2.13.0", python="3.11", step_detection="optimizer", steps=steps,
        category_us={c: shares.get(c, 0.0) * total for c in CATEGORIES if shares.get(c)},
        lines=[LineCost(str(script), line_of(text, frag), cat, ms * 1000 * n) for frag, (cat, ms) in lines.items()],
        memory_steps=[MemoryStep(i, peak_bytes, peak_bytes // 2) for i in range(n)],
        ops_per_step=ops_per_step,
        step_category_us=[{c: shares.get(c, 0.0) * ms * 1000 for c in CATEGORIES} for ms in steps_ms],
        status=status or RunStatus(),
    )
    report = write_outputs(profile, run_dir, repeats=repeats)
    assert report is not None
    return report


def repeats_of(means: list[float], shares: dict[str, float], kept: int) -> dict[str, Any]:
    """report.json's ``repeats`` for runs with these mean step times (three steps each, same shares)."""
    runs = [
        {"run": i, "status": "completed", "step_time_ms": m, "step_times_ms": [m, m, m],
         "breakdown": {c: shares.get(c, 0.0) for c in CATEGORIES}}
        for i, m in enumerate(means, 1)
    ]
    ordered = sorted(means)
    return {"requested": len(means), "count": len(means), "kept": kept, "kept_rule": "median", "runs": runs,
            "step_time_ms": {"min": ordered[0], "median": ordered[(len(means) - 1) // 2], "max": ordered[-1]}}
