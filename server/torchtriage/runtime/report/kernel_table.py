"""report.json's ``kernels``: the GPU kernel table, per kernel name, with the Tensor-Core share.

Built from the operator table's GPU rows (``ProfileData.ops`` with device
"cuda": one row per kernel, copy or memset name, summed while the records
were made, so its size is the number of distinct names), for a profiled run
and an analysed trace alike.  Whether a kernel ran on the Tensor Cores is told
from its name (``diagnosis/device/kernels.py``); the line is the user line of
the launch with most of the kernel's time.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..diagnosis.device.kernels import is_tensor_core_kernel
from ..results.profile_data import ProfileData

KERNEL_ROWS = 20
SHORT_NAME = 80


def kind_of(name: str) -> str:
    """``memcpy``, ``memset`` or ``kernel``, as the trace names GPU activities."""
    low = name.lower()
    return "memcpy" if low.startswith("memcpy") else "memset" if low.startswith("memset") else "kernel"


def short_name(name: str) -> str:
    """The kernel's name without ``void``, its template arguments and its parameter list
    (``void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)`` -> ``at::native::vectorized_elementwise_kernel``)."""
    if kind_of(name) != "kernel":
        return name
    text = re.sub(r"^void\s+", "", name.strip())
    out, depth = [], 0
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    short = re.sub(r"\s+", " ", "".join(out)).strip() or text
    if re.search(r"(^|::)(Kernel\d*|kernel|device_kernel)$", short) and "<" in text:  # a wrapper: its argument names it
        inner = short_name(text[text.index("<") + 1:].split(",")[0].split(">")[0])
        short = f"{short}<{inner}>"
    return short if len(short) <= SHORT_NAME else short[:SHORT_NAME - 1] + "\u2026"


def kernels_json(profile: ProfileData, source: Any) -> Optional[dict[str, Any]]:
    """The table (None when no GPU activity was recorded in a step): rows by GPU time, largest first (<= ``KERNEL_ROWS``)."""
    rows = [o for o in profile.ops if o.device == "cuda" and o.calls]
    if not rows:
        return None
    n = max(1, profile.steps_profiled)
    gpu_us = sum(o.self_us for o in rows)
    kernel_us = sum(o.self_us for o in rows if kind_of(o.name) == "kernel")
    tc_us = sum(o.self_us for o in rows if kind_of(o.name) == "kernel" and is_tensor_core_kernel(o.name))
    top = sorted(rows, key=lambda o: (-o.self_us, o.name))[:KERNEL_ROWS]
    return {
        "gpu_ms_per_step": round(gpu_us / n / 1000.0, 4),
        "kernel_ms_per_step": round(kernel_us / n / 1000.0, 4),
        "tensor_core_share": round(tc_us / kernel_us, 4) if kernel_us > 0 else 0.0,
        "names": len(rows),
        "rows": [
            {
                "name": o.name,
                "short_name": short_name(o.name),
                "kind": kind_of(o.name),
                "calls_per_step": round(o.calls / n, 3),
                "ms_per_step": round(o.self_us / n / 1000.0, 4),
                "share": round(o.self_us / gpu_us, 4) if gpu_us > 0 else 0.0,
                "tensor_cores": kind_of(o.name) == "kernel" and is_tensor_core_kernel(o.name),
                "path": o.path or None,
                "line": o.line or None,
                "function": o.function,
                "source": source.get(o.path, o.line) if o.path else "",
            }
            for o in top
        ],
    }
