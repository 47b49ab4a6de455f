"""Process helpers the test folders share (on the path through pytest's ``pythonpath``)."""

from __future__ import annotations


def alive(pid: int) -> bool:
    """Running and not a zombie (a zombie waiting for its parent is dead for our purpose)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
