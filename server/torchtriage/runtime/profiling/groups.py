"""Signal a whole process group, the one way every host and runner does it.

A run's child starts in its own session, so its pid is also its process group's id;
signalling the group reaches everything it started that stayed in that session.
"""

from __future__ import annotations

import os
import signal


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group ``pid``; a group already gone (``ProcessLookupError``)
    or not ours to signal (``PermissionError``) is left alone."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
