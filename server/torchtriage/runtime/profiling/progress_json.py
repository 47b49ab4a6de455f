"""The ``--progress json`` line: one definition for every command that writes it (profile, lab).

For editors, instead of a progress bar, each update is one JSON object on a line of stdout
(between them, the script's own output lines, as they come)::

    {"event": "progress", "message": str, "percentage": int}
    {"event": "progress", "message": str, "percentage": int, "stage": str}
    {"event": "progress", "message": str, "percentage": int, "stage": str, "stage_percentage": int}

``message`` says what runs now; ``percentage`` (0-100) is how far the whole command is (profile:
the recorded steps; lab: every planned run).  After its recording window a profile also names
the ``stage`` of its analysis (the agent's or the host's) and, when known, how far that stage is
(``stage_percentage``, 0-100), while ``percentage`` stays at the recording's.  The keys come in
this order, written by ``json.dumps`` with its default separators.  The language server reads
these lines back into ``$/progress`` reports (``lsp/commands.py``).
"""

from __future__ import annotations

import json
from typing import Any, Optional


def progress_line(message: str, percentage: int, stage: Optional[str] = None, stage_percentage: Optional[int] = None) -> str:
    """One ``--progress json`` line, without its newline (``stage_percentage`` only with a ``stage``)."""
    payload: dict[str, Any] = {"event": "progress", "message": message, "percentage": percentage}
    if stage is not None:
        payload["stage"] = stage
        if stage_percentage is not None:
            payload["stage_percentage"] = stage_percentage
    return json.dumps(payload)
