"""lab.json's contract: the shipped schema is a valid schema, and LAB_SCHEMA.md (its one document) names every field."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema

from torchtriage.runtime.agent.lab.wire import LabResult, read_lab_result
from torchtriage.runtime.lab.reading import build_reading
from torchtriage.runtime.lab.report import LAB_SCHEMA_PATH, LAB_SCHEMA_VERSION, load_lab_schema

ROOT = Path(__file__).resolve().parents[3]
DOC = (LAB_SCHEMA_PATH.parent / "LAB_SCHEMA.md").read_text(encoding="utf-8")


def test_the_schema_is_a_valid_draft_2020_12_schema_of_this_version() -> None:
    schema = load_lab_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert re.fullmatch(schema["properties"]["schema_version"]["pattern"], LAB_SCHEMA_VERSION)
    assert f"### lab.json (schema {LAB_SCHEMA_VERSION})" in DOC


def test_the_doc_names_every_field_reason_and_reading_key() -> None:
    schema = load_lab_schema()
    row = schema["$defs"]["row"]["properties"]
    for name in list(schema["properties"]) + list(row):
        assert f"`{name}`" in DOC, name
    for reason in row["reason"]["enum"]:
        assert reason is None or f"`{reason}`" in DOC, reason
    for verdict in schema["properties"]["reading"]["properties"]["verdict"]["enum"]:
        assert f"`{verdict}`" in DOC, verdict
    reading = build_reading([])
    assert reading == {"precision": None, "compile": None, "verdict": "incomplete", "fastest": None, "lines": []}


def test_the_agent_record_reads_back_by_field_name() -> None:
    written = LabResult(precision="bf16", compile_mode="default", step_times_s=[0.01, 0.02], losses=[2.3, None], models=["Net"])._asdict()
    assert read_lab_result(dict(written, unknown_future_field=1)) == LabResult(**written)
    assert read_lab_result({"precision": "fp16"}) == LabResult(precision="fp16")  # an older agent's fewer fields take defaults
