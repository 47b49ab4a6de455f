"""Where the peak's memory goes, from the allocations a profile records and the storages the optimizers hold.

The agent.json here is written by hand (a CUDA run: the allocator's total counts memory allocated before
the window too); test_device_findings_real_runs.py has the real CPU run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import random

import jsonschema
import pytest

from torchtriage.runtime.agent.alloc_summary import summarize_allocs
from torchtriage.runtime.agent.wire import WIRE_VERSION, Alloc, Charge, DeviceFacts, Held, OptimizerInfo, Site, Step, read_records
from torchtriage.runtime.attribution.lines import build_profile
from torchtriage.runtime.diagnosis.bottleneck import diagnose
from torchtriage.runtime.report.html import render_html
from torchtriage.runtime.report.writer import build_report, load_schema

GIB = 2**30
MS = 1_000_000
FORWARD, STEP = 0, 1  # chains: the forward line (backward allocations are charged to it too) and opt.step()
PARAMS, STATE, GRAD, ACT, TEMP, OLD_ACT = 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000


def agent_json(tmp: Path, *, state: float = 2.0, activations: float = 0.5, device: str = "cuda", held: bool = True) -> dict[str, Any]:
    """Two 10 ms steps of train.py; sizes in GiB.  Before the window: parameters (1), optimizer state
    (``state``) and 0.25 of other memory.  Step 0 allocates a gradient at GRAD and an activation that
    step 1 frees; step 1 frees that gradient (zero_grad), allocates an activation, a new gradient at the
    same address, frees the activation, and the optimizer step makes a temporary."""
    script = str(tmp / "train.py")
    base = int((1 + state + 0.25) * GIB) if device == "cuda" else 0
    total = base
    allocs = []

    def alloc(step: int, chain: int, t: int, size: float, ptr: int) -> None:
        nonlocal total
        total += int(size * GIB)
        allocs.append(Alloc(step, chain, -1, t, int(size * GIB), total, ptr, device))

    alloc(0, FORWARD, 1 * MS, 0.1, OLD_ACT)
    alloc(0, FORWARD, 2 * MS, 1.0, GRAD)
    alloc(1, FORWARD, 10 * MS + 100, -1.0, GRAD)  # zero_grad(set_to_none=True)
    alloc(1, FORWARD, 11 * MS, activations, ACT)
    alloc(1, FORWARD, 12 * MS, 1.0, GRAD)  # backward: the new gradient, same address
    alloc(1, FORWARD, 13 * MS, -activations, ACT)
    alloc(1, STEP, 14 * MS, 0.25, TEMP)
    alloc(1, STEP, 15 * MS, -0.25, TEMP)
    kept = [Held("parameter", device, PARAMS, GIB), Held("optimizer_state", device, STATE, int(state * GIB)),
            Held("gradient", device, GRAD, GIB)] if held else []
    raw = {
        "steps": [Step(5, 0, 10 * MS), Step(6, 10 * MS, 20 * MS)],
        "sites": [Site("line", script, 10, "<module>"), Site("line", script, 12, "<module>")],
        "chains": [[0], [1]],
        "charges": [Charge(s, FORWARD, "compute", "aten::mm", -1, True, 6 * MS, 3) for s in (0, 1)]
        + [Charge(s, STEP, "optimizer", "step", -1, True, 3 * MS, 1) for s in (0, 1)],
        "allocs": allocs,
        "held": kept,
        "optimizers": [OptimizerInfo("AdamW", GIB // 4, int(state * GIB), "foreach")] if state else [],
        "device_facts": [DeviceFacts("highest", False, True, 8, 0, 6 * GIB, 5 * GIB, 0, 80 * GIB, "") if device == "cuda"
                         else DeviceFacts("highest", False, True, -1, -1, 0, 0, 0, 0, "")],
        "meta": {"script": script, "cwd": str(tmp), "device": device, "device_name": "NVIDIA A100-SXM4-80GB", "step_detection": "optimizer"},
        "wire_version": WIRE_VERSION,
        "status": {"status": "completed", "message": "", "traceback": "", "exit_code": 0},
    }
    (tmp / "train.py").write_text("\n" * 9 + "loss = model(x)\nloss.backward()\nopt.step()\n", encoding="utf-8")
    return json.loads(json.dumps(raw))


def test_the_peak_is_split_into_its_components(tmp_path: Path) -> None:
    shape = build_profile(agent_json(tmp_path)).memory_shape
    assert shape is not None and shape.peak_step == 1
    gib = {c: round(b / GIB, 3) for c, b in shape.components.items()}
    # at the peak (the new gradient allocated): parameters and state from before the window, this step's
    # gradient (its address was reused: only the allocation still held at the end counts), the activation,
    # and other: the 0.25 the allocator counts from before the window plus step 0's activation
    assert gib == {"parameters": 1.0, "gradients": 1.0, "optimizer_state": 2.0, "activations": 0.5, "other": 0.35}
    assert shape.peak_bytes == sum(shape.components.values())
    assert [(a.line, round(a.bytes / GIB, 2)) for a in shape.activation_lines] == [(10, 0.5)]
    assert shape.dominant == "optimizer_state"


def test_optimizer_state_dominating_names_it_and_the_fixes(tmp_path: Path) -> None:
    diagnosis = diagnose(build_profile(agent_json(tmp_path)))
    [f] = [f for f in diagnosis.runtime_findings if f.code == "TTR701"]
    assert f.span.line == 12 and f.name == "runtime-memory-shape"  # on the optimizer's line
    assert f.message.startswith("optimizer state is 41% of the memory live at the peak")
    actions = " | ".join(r["action"] for r in f.extra["recommendations"])
    assert "8-bit AdamW" in actions and "ZeroRedundancyOptimizer" in actions and "fused=True" in actions
    assert "AdamW (foreach): 2,048.0 MiB of state" in " ".join(e["text"] for e in f.extra["evidence"])
    assert f.severity.value == "info"  # 6 of 80 GiB reserved: far from the limit


def test_activations_dominating_ask_for_checkpointing_where_they_are_made(tmp_path: Path) -> None:
    diagnosis = diagnose(build_profile(agent_json(tmp_path, state=0.0, activations=4.0)))
    [f] = [f for f in diagnosis.runtime_findings if f.code == "TTR701"]
    assert f.span.line == 10 and f.message.startswith("activations is")
    assert "Checkpoint the activations" in f.extra["recommendations"][0]["action"] and "train.py:10 (4,096.0 MiB)" in f.extra["recommendations"][0]["action"]


def test_balanced_or_small_memory_gets_no_finding(tmp_path: Path) -> None:
    balanced = diagnose(build_profile(agent_json(tmp_path, state=0.5, activations=0.5)))
    assert not [f for f in balanced.runtime_findings if f.code == "TTR701"]


def test_without_held_storages_everything_before_the_window_is_other(tmp_path: Path) -> None:
    shape = build_profile(agent_json(tmp_path, held=False)).memory_shape
    assert shape is not None and shape.components["parameters"] == shape.components["optimizer_state"] == 0
    assert shape.components["other"] == pytest.approx((1 + 2 + 0.25 + 0.1) * GIB, rel=1e-6)
    assert shape.components["activations"] == pytest.approx(1.5 * GIB, rel=1e-6)  # an unknown gradient looks like one


def test_report_section_validates_and_draws_a_stacked_bar(tmp_path: Path) -> None:
    profile = build_profile(agent_json(tmp_path))
    report = build_report(profile, diagnose(profile), tmp_path)
    jsonschema.validate(report, load_schema())
    section = report["memory_shape"]
    assert section["dominant"] == "optimizer_state" and section["reserved_peak_bytes"] == 6 * GIB
    assert section["activation_lines"][0]["source"] == "loss = model(x)"
    assert section["recommendations"][0]["action"].startswith("Use 8-bit AdamW")
    html = render_html(report, tmp_path)
    assert "class='chart memory-shape'" in html and "data-category='optimizer_state'" in html


def test_profiles_written_before_the_memory_shape_still_load(tmp_path: Path) -> None:
    profile = build_profile(agent_json(tmp_path))
    data = profile.to_json()
    for key in ("shapes", "device_facts", "memory_shape", "gpu_gaps"):
        data.pop(key)
    old = type(profile).from_json(data)
    assert old.memory_shape is None and diagnose(old).runtime_findings == [f for f in diagnose(old).runtime_findings if f.code < "TTR6"]
    again = type(profile).from_json(json.loads(json.dumps(profile.to_json())))
    assert again.memory_shape == profile.memory_shape and again.device_facts == profile.device_facts


# -- the allocator's events summed before the last step (agent/alloc_summary.py): the same memory is read --------------

def _summarized(raw: dict) -> dict:
    allocs, steps, sites, cut = summarize_allocs(read_records(raw["allocs"], Alloc), read_records(raw["steps"], Step))
    return json.loads(json.dumps(dict(raw, allocs=allocs, alloc_steps=steps, alloc_sites=sites, allocs_cut_ns=cut)))


def _memory(raw: dict):
    profile = build_profile(raw)
    return profile.memory_steps, profile.memory_lines, profile.memory_shape


def test_the_hand_written_run_reads_the_same_from_the_summary(tmp_path: Path) -> None:
    raw = agent_json(tmp_path)
    summarized = _summarized(raw)
    assert summarized["allocs_cut_ns"] == 10 * MS and summarized["alloc_steps"] and summarized["alloc_sites"]
    assert _memory(summarized) == _memory(raw)


def test_a_long_window_keeps_one_steps_events_and_reads_the_same(tmp_path: Path) -> None:
    raw = agent_json(tmp_path, device="cpu", held=False)
    rng = random.Random(7)
    steps, allocs, total, live = [], [], 0, []
    for step in range(30):  # 30 steps of 200 allocator events, some blocks kept across steps
        start = step * 10 * MS
        steps.append(Step(step, start, start + 10 * MS))
        for i in range(200):
            t = start + 1000 + i * 40_000
            if live and rng.random() < 0.5:
                ptr, size = live.pop(rng.randrange(len(live)))
                total -= size
                allocs.append(Alloc(step, rng.randrange(2), -1, t, -size, total, ptr, "cpu"))
            else:
                size = rng.randrange(1, 10_000)
                ptr = 0x10000 + len(allocs)
                total += size
                live.append((ptr, size))
                allocs.append(Alloc(step, rng.randrange(2), -1, t, size, total, ptr, "cpu"))
    raw = json.loads(json.dumps(dict(raw, steps=steps, allocs=allocs)))
    summarized = _summarized(raw)
    assert len(summarized["allocs"]) <= 200 + len(live) + 200  # the last step's events and the blocks live at its start
    assert len(json.dumps(summarized)) < len(json.dumps(raw)) / 5
    assert _memory(summarized) == _memory(raw)


def test_a_single_step_keeps_its_events(tmp_path: Path) -> None:
    raw = agent_json(tmp_path)
    allocs = read_records(raw["allocs"], Alloc)
    assert summarize_allocs(allocs, [Step(0, 0, 20 * MS)]) == (allocs, [], [], None)
