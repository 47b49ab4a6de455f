"""Traces recorded with plain torch.profiler, as users record them, and what the analyze tests check on them."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema

from torchtriage.runtime.report.writer import load_schema

DATA = Path(__file__).resolve().parents[2] / "data" / "runtime"
SCRIPT = DATA / "traces" / "train_traced.py"
CUDA = DATA / "cuda"
VALIDATOR = jsonschema.Draft202012Validator(load_schema())


def record(*args: str, timeout: float = 300) -> None:
    """Run train_traced.py with ARGS (``--trace OUT`` or ``--tb DIR``...), failing the test if it fails."""
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def line_of(text: str, script: Path = SCRIPT) -> int:
    found = [n for n, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


def check_schema(report: dict[str, Any]) -> None:
    errors = sorted(VALIDATOR.iter_errors(report), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def load_events(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
        return json.load(handle)["traceEvents"]


def gpu_busy_by_hand(path: Path) -> list[float]:
    """Per ProfilerStep on the CPU: the share of its range covered by the union of kernel, memcpy and
    memset intervals, computed from the JSON alone (independent of torchtriage's code)."""
    events = [e for e in load_events(path) if e.get("ph") == "X"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    work = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    shares = []
    for low, high in steps:
        busy, covered = 0.0, low
        for start, end in work:
            start, end = max(start, covered, low), min(end, high)
            if end > start:
                busy += end - start
                covered = end
        shares.append(busy / (high - low))
    return shares
