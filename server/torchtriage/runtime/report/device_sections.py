"""report.json's sections about the device's work (new in schema 1.2).

``matmul_shapes`` (tensor_cores), ``memory_shape`` (memory_shape),
``gpu_idle_gaps`` (idle_gaps) and ``device_facts``: the math settings and
the GPU's capability the Tensor-Core findings were judged by.
"""

from __future__ import annotations

from typing import Any

from ..diagnosis.device.idle_gaps import gaps_json
from ..diagnosis.device.memory_shape import memory_shape_json
from ..results.profile_data import ProfileData
from ..diagnosis.device.tensor_cores import shapes_json
from .kernel_table import kernels_json


def device_sections(profile: ProfileData, source: Any) -> dict[str, Any]:
    """The four sections, keyed as in report.json; ``source`` reads source lines (report.SourceLines)."""
    facts = profile.device_facts
    return {
        "device_facts": None if facts is None else {
            "float32_matmul_precision": facts.float32_matmul_precision,
            "allow_tf32": facts.allow_tf32,
            "cudnn_allow_tf32": facts.cudnn_allow_tf32,
            "compute_capability": f"{facts.capability[0]}.{facts.capability[1]}" if facts.capability else None,
        },
        "matmul_shapes": shapes_json(profile, source),
        "memory_shape": memory_shape_json(profile, source),
        "gpu_idle_gaps": gaps_json(profile, source),
        "kernels": kernels_json(profile, source),
    }

