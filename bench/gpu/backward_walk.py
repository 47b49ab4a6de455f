"""Where a step's GPU kernels sit in torch.profiler's event tree, by thread: forward and backward.

    python bench/gpu/backward_walk.py OUT.json [--device cuda|cpu]

A diagnostic for the agent's walk (``runtime/agent/collect.py``): on the H100 the
per-line GPU time of backward kernels came out low.  It records three steps of a
small MLP (forward, backward, SGD) and writes, for every root of
``experimental_event_tree()``, its thread, name and the CUDA runtime calls and GPU
activity found below it, against the kernels and runtime calls in the profiler's
flat event list, matched by correlation id.  Standard library and torch only.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

KINETO = torch._C._profiler._EventType.Kineto.value


def _walk(node: Any, found: dict[str, Any]) -> None:
    """Gather the Kineto nodes below NODE: runtime calls by correlation id, GPU activity by name."""
    stack = [node]
    while stack:
        item = stack.pop()
        if item.tag.value == KINETO:
            name = item.name
            if name.startswith(("cuda", "cu")):
                found["runtime"][item.correlation_id] = name
            else:
                found["gpu"].append(name)
        stack.extend(item.children)


def main() -> None:
    out = sys.argv[1]
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data, target = torch.randn(64, 256, device=device), torch.randint(0, 10, (64,), device=device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    for _ in range(3):  # warm-up outside the profiler
        nn.functional.cross_entropy(model(data), target).backward()
        optimizer.step()
        optimizer.zero_grad()
    with profile(activities=activities, with_stack=True, record_shapes=False) as prof:
        for _ in range(3):
            loss = nn.functional.cross_entropy(model(data), target)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if device == "cuda":
            torch.cuda.synchronize()
    results = prof.profiler.kineto_results
    roots = results.experimental_event_tree()
    main_tid = roots[0].start_tid if roots else -1  # the profiled loop's thread: it opens first
    by_root: list[dict[str, Any]] = []
    tree_runtime: dict[int, str] = {}
    tree_gpu = Counter()
    for root in roots:
        found: dict[str, Any] = {"runtime": {}, "gpu": []}
        _walk(root, found)
        tree_runtime.update(found["runtime"])
        tree_gpu.update(found["gpu"])
        if found["runtime"] or found["gpu"]:
            by_root.append({"name": root.name, "tid": root.start_tid, "main": root.start_tid == main_tid,
                            "tag": str(root.tag), "runtime_calls": len(found["runtime"]), "gpu_activity": len(found["gpu"]),
                            "gpu_names": Counter(found["gpu"]).most_common(5)})
    flat_kernels: list[dict[str, Any]] = []
    flat_runtime: dict[int, dict[str, Any]] = {}
    for event in results.events():
        kind = str(event.device_type())
        entry = {"name": event.name(), "correlation": event.correlation_id(), "device": kind}
        if "CUDA" in kind:
            flat_kernels.append(entry)
        elif event.name().startswith(("cuda", "cu")):
            flat_runtime[event.correlation_id()] = {**entry, "tid": event.start_thread_id()}
    launches_by_tid = Counter(str(v.get("tid")) for v in flat_runtime.values())
    missing = [k for k in flat_kernels if k["correlation"] not in tree_runtime]
    report = {
        "torch": torch.__version__, "device": device,
        "device_name": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "main_tid": main_tid,
        "roots": len(roots),
        "roots_by_tid": Counter(str(r.start_tid) for r in roots),
        "roots_with_device_events": by_root[:80],
        "flat_kernels": len(flat_kernels),
        "flat_runtime_calls": len(flat_runtime),
        "flat_runtime_calls_by_tid": launches_by_tid,
        "tree_runtime_calls": len(tree_runtime),
        "tree_gpu_activity": sum(tree_gpu.values()),
        "kernels_whose_launch_is_not_in_the_tree": len(missing),
        "missing_names": Counter(k["name"][:80] for k in missing).most_common(20),
        "missing_launch_tids": Counter(str(flat_runtime.get(k["correlation"], {}).get("tid")) for k in missing),
    }
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1, default=str)
    print(json.dumps({k: v for k, v in report.items() if k != "roots_with_device_events"}, default=str)[:3000])


if __name__ == "__main__":
    main()
