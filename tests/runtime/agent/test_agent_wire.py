"""agent.json's wire format: what the agent writes, the host reads back field by field."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

import torchtriage.runtime.agent as agent_package
from torchtriage.runtime.agent import wire as host_wire
from torchtriage.runtime.attribution.lines import build_profile
from torchtriage.runtime.attribution.samples import FrameSample, read_samples

from run_support import agent_json, profile_cli

AGENT_DIR = Path(agent_package.__file__).resolve().parent
# One record of each kind, every field a value no other field has.
VALUES = {
    "Step": (7, 1_000, 2_000, 150),
    "Site": ("scope", "/w/train.py", 12, "forward"),
    "Charge": (1, 3, "compute", "aten::mm", -1, True, 5_000, 2),
    "Root": (1_500, 1_600),
    "Alloc": (2, 4, 0, 1_700, 4096, 8192, 140_000, "cpu"),
    "AllocStep": ("cuda", 3, 1_048_576, 524_288),
    "AllocSite": ("cpu", 4, -1, 65_536),
    "Sync": (3, 5, -1, "item", "aten::_local_scalar_dense", 900),
    "GpuActivity": (4, 6, 1, "ampere_sgemm", 1_800, 300),
    "Sample": (1_900, 3, 4, 33),  # file and function: indexes into agent.json's strings
    "OpStat": ("aten::addmm", "cpu", False, 6, 7_000, 8_000, 9, 10),
    "Collective": (0, "gloo:all_reduce", 2_100, 2_400),
    "Compile": ("0/1", "dynamo", "forward", "/w/model.py", 14, "/w/train.py", 40, 2_100, 2_200, "tensor 'x' size mismatch", ""),
    "GraphBreak": ("0/0", "/w/model.py", 16, "Unsupported Tensor.item() call", "Explanation: ..."),
    "DtypeEvent": (5, 11, 12, "mixed", "aten::mul", "bfloat16[8] float32[8]", 13, 14, 15, 16, 17, "/w/model.py", 18, "scale"),
    "ShapeStat": ("aten::mm", "bfloat16", "4096x1000,1000x30522", 11, 12_000, 13_000, 14, 15),
    "Held": ("optimizer_state", "cuda", 160_000, 16_384),
    "OptimizerInfo": ("AdamW", 1_048_576, 8_388_608, "foreach"),
    "Gap": (5, 2_100, 3_100, "/w/model.py", 42, "train_step", True, "aten::_local_scalar_dense", 4, "ampere_bf16_gemm"),
    "DeviceFacts": ("highest", False, True, 8, 0, 17_179_869_184, 8_589_934_592, 1_073_741_824, 85_899_345_920, "expandable_segments:False"),
}


def _agent_side(name: str) -> ModuleType:
    """The agent's own copy of a module, loaded under a private package name as bootstrap.py does."""
    package = "_torchtriage_agent_wire_test"
    if package not in sys.modules:
        spec = importlib.util.spec_from_file_location(package, AGENT_DIR / "__init__.py", submodule_search_locations=[str(AGENT_DIR)])
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[package] = module
        spec.loader.exec_module(module)
    return importlib.import_module(f"{package}.{name}")


def test_every_record_kind_reads_back_field_by_field(tmp_path: Path) -> None:
    agent_wire, channel = _agent_side("wire"), _agent_side("channel")
    assert agent_wire.Step is not host_wire.Step  # two real ends, not one class
    written = {kind: getattr(agent_wire, kind)(*values) for kind, values in VALUES.items()}
    path = tmp_path / "agent.json"
    channel.write_json(str(path), {kind: [record] for kind, record in written.items()})
    data = json.loads(path.read_text(encoding="utf-8"))
    for kind, record in written.items():
        (read,) = host_wire.read_records(data[kind], getattr(host_wire, kind))
        assert read._fields == record._fields
        for field in record._fields:
            assert getattr(read, field) == getattr(record, field), (kind, field)
            assert type(getattr(read, field)) is type(getattr(record, field)), (kind, field)


def test_every_agent_json_key_has_one_record_type() -> None:
    agent_wire = _agent_side("wire")
    assert {k: v.__name__ for k, v in agent_wire.RECORDS.items()} == {k: v.__name__ for k, v in host_wire.RECORDS.items()}
    assert set(VALUES) == {v.__name__ for v in host_wire.RECORDS.values()}


def test_a_row_of_the_wrong_shape_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"Sync record needs the fields \('step', 'chain'"):
        host_wire.read_records([[1, 2, 3]], host_wire.Sync)


def test_samples_name_their_file_and_function_through_the_string_table() -> None:
    raw = {"strings": ["/w/data.py", "__getitem__", "/w/train.py"], "samples": [[10, 0, 1, 7], [11, 2, 1, 9]]}
    assert read_samples(raw, "samples") == [FrameSample(10, "/w/data.py", "__getitem__", 7), FrameSample(11, "/w/train.py", "__getitem__", 9)]
    with pytest.raises(ValueError, match="not in 'strings'"):
        read_samples({"strings": [], "samples": [[10, 0, 1, 7]]}, "samples")


def test_an_agent_of_another_wire_version_is_refused() -> None:
    with pytest.raises(ValueError, match="wire version 999"):
        build_profile({"wire_version": 999})


@pytest.mark.slow
def test_a_real_run_writes_records_the_host_reads(tmp_path: Path) -> None:
    proc, run_dir = profile_cli(tmp_path, "train_basic.py")
    assert proc.returncode == 0, proc.stderr
    data = agent_json(run_dir)
    assert data["wire_version"] == host_wire.WIRE_VERSION
    for key, record in host_wire.RECORDS.items():
        rows = host_wire.read_records(data.get(key, []), record)
        for row in rows:
            for field, annotation in record.__annotations__.items():
                assert isinstance(getattr(row, field), {"int": int, "str": str, "bool": bool}[annotation.__name__ if isinstance(annotation, type) else annotation]), (key, field)
    assert data["steps"] and data["charges"] and data["samples"]
    assert set(read_samples(data, "samples")[0][1:3]) <= set(data["strings"])
