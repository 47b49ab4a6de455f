"""lab.json (a public contract: LAB_SCHEMA.md, lab_schema.json) and lab.html for one lab.

``build_lab`` assembles the document from the runs; ``write_lab`` writes both
files into the lab's folder.  lab.html and the terminal table render from the
document alone.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import __version__
from .plan import Configuration, LabSettings
from .reading import build_reading
from .rows import build_rows
from .run import LabRuns

LAB_SCHEMA_VERSION = "1.0"
LAB_SCHEMA_PATH = Path(__file__).resolve().parent / "lab_schema.json"
LAB_JSON = "lab.json"
LAB_HTML = "lab.html"


@dataclass(frozen=True)
class LabPaths:
    json: Path
    html: Path


def load_lab_schema() -> dict[str, Any]:
    """The JSON schema every lab.json satisfies."""
    return json.loads(LAB_SCHEMA_PATH.read_text(encoding="utf-8"))


def build_lab(
    script: Path, args: list[str], settings: LabSettings, configurations: list[Configuration], lab: LabRuns, lab_dir: Path
) -> dict[str, Any]:
    """The lab.json document."""
    rows = build_rows(configurations, lab, settings)
    meta = next((run.meta for run in lab.runs if run.meta.get("torch_version")), {})
    return {
        "schema_version": LAB_SCHEMA_VERSION,
        "generated_by": f"torchtriage {__version__}",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "script": str(script),
        "args": list(args),
        "lab_dir": str(lab_dir),
        "device": lab.device,
        "device_name": meta.get("device_name"),
        "torch_version": meta.get("torch_version"),
        "python": meta.get("python"),
        "settings": {
            "modes": [c.name for c in configurations], "steps": settings.steps, "warmup": settings.warmup,
            "seed": settings.seed, "repeat": settings.repeat, "timeout_s": settings.timeout_s,
            "loss_tolerance": settings.loss_tolerance, "run_skipped": settings.run_skipped,
        },
        "rows": rows,
        "reading": build_reading(rows, str(lab.device or "cpu")),
        "files": {"lab_json": LAB_JSON, "lab_html": LAB_HTML},
    }


def write_lab(document: dict[str, Any], lab_dir: Path) -> LabPaths:
    """lab.json and lab.html in ``lab_dir``."""
    from .html import render_lab_html

    lab_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = lab_dir / LAB_JSON, lab_dir / LAB_HTML
    json_path.write_text(json.dumps(document, indent=2, allow_nan=False), encoding="utf-8")
    html_path.write_text(render_lab_html(document, lab_dir), encoding="utf-8")
    return LabPaths(json_path, html_path)


def load_lab(lab_dir: Path) -> dict[str, Any]:
    return json.loads((lab_dir / LAB_JSON).read_text(encoding="utf-8"))
