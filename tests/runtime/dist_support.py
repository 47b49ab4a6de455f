"""Shared helpers for the multi-process tests (test_dist_*): real torchrun runs of ddp_train.py on CPU (gloo)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from process_support import alive
from run_support import DATA, FAST

SCRIPT = DATA / "ddp_train.py"


def dist_cli(out: Path, *script_args: str, options: tuple[str, ...] = (), nproc: int = 2, timeout: float = 240,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``torchtriage profile --nproc-per-node N`` on ddp_train.py; returns the finished process."""
    command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(out), *FAST,
               "--nproc-per-node", str(nproc), *options, str(SCRIPT)]
    if script_args:
        command += ["--", *script_args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd or out.parent)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def report(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "report.json").read_text())


def rank_pids(run: Path) -> list[int]:
    """The pids the ranks reported in their agent.json (every rank that wrote one)."""
    pids = []
    for agent in sorted(run.glob("rank*/agent.json")):
        pid = (json.loads(agent.read_text()).get("meta") or {}).get("rank", {}).get("pid")
        if isinstance(pid, int):
            pids.append(pid)
    return pids


def _pids_whose(name: str, matches: Callable[[bytes], bool]) -> list[int]:
    """Live pids (other than ours) whose ``/proc/<pid>/<name>`` bytes satisfy ``matches``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/{name}", "rb") as handle:
                if matches(handle.read()) and alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def processes_of_run(out: Path) -> list[int]:
    """Live pids (other than ours) whose environment names the run folder ``out`` (the agent's config
    carries it), whether or not they lived long enough to write an agent.json."""
    needle = str(out).encode()
    return _pids_whose("environ", lambda environ: needle in environ)


def processes_with(text: str) -> list[int]:
    """Pids (other than ours) whose command line contains ``text``."""
    needle = text.encode()
    return _pids_whose("cmdline", lambda cmdline: needle in cmdline.replace(b"\0", b" "))


class TbCache:
    """What torch-tb-profiler's RunLoader needs of TensorBoard's file cache, for local files (module level:
    its worker processes unpickle it)."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = str(cache_dir)

    def get_remote_cache(self, path: str) -> str:
        return path
