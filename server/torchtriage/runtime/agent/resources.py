"""The agent.json records about the device's work that the event walk alone does not give.

Called once the window is saved, by the script session and the in-kernel
profiler alike: the training state's storages and optimizers
(``memfacts``), the largest GPU idle gaps with the main thread's frame in
each (``gaps``), and the math settings and allocator figures.  The matmul
and convolution shapes come from the walk itself (``Collector.shapes``).
Standard library and torch only.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence

from .collect import Collector
from .gaps import gap_frames
from .memfacts import OptimizerRegistry, device_facts, held_storages
from .usercode import UserCode


def resource_records(roots: Sequence[Any], collector: Collector, user: UserCode, registry: OptimizerRegistry, device: str) -> Dict[str, Any]:
    """``held``, ``optimizers``, ``gaps`` and ``device_facts`` for agent.json (types in ``wire``)."""
    held, optimizers = held_storages(registry)
    gaps = gap_frames(roots, collector.gpu, collector.steps, collector.main_tid, user) if collector.gpu else []
    return {"held": held, "optimizers": optimizers, "gaps": gaps, "device_facts": [device_facts(device)]}
