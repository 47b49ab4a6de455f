"""``--format json``: a JSON array of findings (the documented, stable schema)."""

from __future__ import annotations

import json
from typing import Sequence

from ..checker import FileReport


def render(reports: Sequence[FileReport]) -> str:
    items = [finding.to_json() for report in reports for finding in report.findings]
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"
