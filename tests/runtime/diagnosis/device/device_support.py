"""Helpers the device-finding tests share: the runtime findings by code, and agent.json with its device facts changed."""

from __future__ import annotations

from typing import Any

from torchtriage.runtime.diagnosis.bottleneck import diagnose
from torchtriage.runtime.results.profile_data import ProfileData


GIB = 2**30


def findings(profile: ProfileData) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in diagnose(profile).runtime_findings:
        out.setdefault(f.code, []).append(f)
    return out


def facts(raw: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``raw`` with fields of its DeviceFacts record changed."""
    fields = ["float32_matmul_precision", "allow_tf32", "cudnn_allow_tf32", "capability_major", "capability_minor",
              "reserved_peak_bytes", "allocated_peak_bytes", "inactive_split_peak_bytes", "total_bytes", "alloc_conf"]
    row = list(raw["device_facts"][0])
    for name, value in changes.items():
        row[fields.index(name)] = value
    return {**raw, "device_facts": [row]}
