"""Progress messages to the parent process: one JSON object per line on a pipe fd.

Each line is written with one ``write`` call: lines up to ``PIPE_BUF`` (4 KiB)
are atomic, so the ranks of a torchrun run can share one FIFO."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, NoReturn, Optional


class Channel:
    """Writes progress events; silently does nothing once the pipe is gone."""

    def __init__(self, fd: Optional[int], tags: Optional[Dict[str, Any]] = None) -> None:
        self.fd = fd
        self.tags = dict(tags or {})  # fields every event carries (a torchrun worker's rank)

    def send(self, event: str, **fields: Any) -> None:
        if self.fd is None:
            return
        payload = dict(self.tags, **fields)
        payload.update(event=event, time=time.time())
        data = (json.dumps(payload, default=str) + "\n").encode("utf-8")
        try:
            while data:
                written = os.write(self.fd, data)
                data = data[written:]
        except OSError:
            self.fd = None

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None

    def done_and_exit(self, status: str) -> NoReturn:
        """Tell the parent the run is done, then end the process at once (no interpreter shutdown:
        the user's script is left where it stopped, after what was recorded has been written)."""
        self.send("done", status=status)
        self.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def write_json(path: str, data: Any) -> None:
    """Write compact JSON atomically and durably (rename after fsync).

    ``json.dumps`` rather than ``json.dump``: only the one-shot call uses the C
    encoder (``dump`` encodes chunk by chunk in Python, ~10x slower)."""
    text = json.dumps(data, separators=(",", ":"))
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
