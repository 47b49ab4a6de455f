"""Run the script under torchrun with the agent in every rank, and leave no process behind.

``torchrun`` (``python -m torch.distributed.run`` of the chosen interpreter) is
given the agent's ``bootstrap.py`` as the training script and the user's script
and arguments after it, so every worker runs ``python -u bootstrap.py SCRIPT
ARGS``; the rendezvous options pass through unchanged.  torchrun closes every
inherited file descriptor and starts each worker in a session of its own, so:

* progress comes through a FIFO (``progress_path`` in the agent's settings):
  each rank opens it for writing and tags its events with its rank;
* clean-up cannot rely on one process group.  A stop sends SIGTERM to torchrun
  (it forwards SIGTERM to each worker's group; the agents save what they
  recorded), waits ``DIST_GRACE_S``, then SIGKILLs torchrun's group, each rank's
  group (pids from the ranks' first event) and every process still carrying
  this run's marker variable (``reap.py``): no orphans even when torchrun
  itself is killed or a rank ignores SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..profiling.runner import BOOTSTRAP, ChildRun, EventCallback, OutputCallback, RunOptions
from .reap import MARKER_ENV, kill_marked, kill_groups

RANKS_ACTIVE = 5  # the recorded window of every rank when --active is not given

TORCHRUN_OMP_NOTE = "Setting OMP_NUM_THREADS environment variable for each process"
DIST_GRACE_S = 15.0  # after SIGTERM: ranks export and walk their window before exiting
MAX_RANKS_PER_CORE = 2  # more ranks than this per usable core only measures the contention
MAX_NPROC_PER_NODE = 64


@dataclass(frozen=True)
class DistOptions:
    """torchrun's launch options as given on the command line (rendezvous passed through)."""

    nproc_per_node: int
    nnodes: str = "1"  # "M" or torchrun's elastic "MIN:MAX"
    node_rank: int = 0
    master_addr: Optional[str] = None
    master_port: Optional[int] = None
    rdzv_backend: Optional[str] = None
    rdzv_endpoint: Optional[str] = None
    rdzv_id: Optional[str] = None
    rdzv_conf: Optional[str] = None

    @property
    def max_nodes(self) -> int:
        return int(self.nnodes.split(":")[-1])

    @property
    def standalone(self) -> bool:
        """One node and no rendezvous given: torchrun's ``--standalone`` picks a free port (its default,
        29500, would clash with any other run on the machine)."""
        return self.max_nodes == 1 and all(
            v is None for v in (self.master_addr, self.master_port, self.rdzv_backend, self.rdzv_endpoint, self.rdzv_id))

    def torchrun_arguments(self) -> list[str]:
        """The options for ``torch.distributed.run``, in its own spelling."""
        args = [f"--nproc-per-node={self.nproc_per_node}", f"--nnodes={self.nnodes}", "--max-restarts=0"]
        if self.standalone:
            return args + ["--standalone"]
        if self.rdzv_backend is None:  # static rendezvous: torchrun wants a node rank
            args.append(f"--node-rank={self.node_rank}")
        for flag, value in (
            ("--master-addr", self.master_addr), ("--master-port", self.master_port), ("--rdzv-backend", self.rdzv_backend),
            ("--rdzv-endpoint", self.rdzv_endpoint), ("--rdzv-id", self.rdzv_id), ("--rdzv-conf", self.rdzv_conf),
        ):
            if value is not None:
                args.append(f"{flag}={value}")
        return args


def check_options(dist: DistOptions, usable_cores: int) -> None:
    """Raise ValueError with what to change when the launch options cannot work or make no sense here."""
    if dist.nproc_per_node < 1:
        raise ValueError("--nproc-per-node must be at least 1")
    limit = min(MAX_NPROC_PER_NODE, max(2, MAX_RANKS_PER_CORE * usable_cores))
    if dist.nproc_per_node > limit:
        raise ValueError(
            f"--nproc-per-node {dist.nproc_per_node} is more than this machine can run sensibly: {usable_cores} usable "
            f"core(s) allow at most {limit} ranks (each rank is a Python process with its own profiler); per-rank "
            "behaviour already shows with 2"
        )
    parts = dist.nnodes.split(":")
    if not all(p.isdigit() and int(p) >= 1 for p in parts) or len(parts) > 2 or int(parts[0]) > int(parts[-1]):
        raise ValueError(f"--nnodes {dist.nnodes!r}: expected a number of nodes (or MIN:MAX), at least 1")
    if dist.max_nodes > 1:
        if dist.rdzv_backend is None and (dist.master_addr is None or dist.master_port is None):
            raise ValueError("--nnodes above 1 needs --master-addr and --master-port (or --rdzv-backend and --rdzv-endpoint)")
        if dist.rdzv_backend is not None and dist.rdzv_endpoint is None:
            raise ValueError("--rdzv-backend needs --rdzv-endpoint HOST:PORT")
    if dist.rdzv_backend is None and not 0 <= dist.node_rank < dist.max_nodes:
        raise ValueError(f"--node-rank {dist.node_rank} is not between 0 and --nnodes - 1 ({dist.max_nodes - 1})")
    if dist.master_port is not None and not 0 < dist.master_port < 65536:
        raise ValueError(f"--master-port {dist.master_port} is not a TCP port")


class TorchrunChild(ChildRun):
    """torchrun and its ranks, seen by ``run_agent`` as one child."""

    def __init__(self, options: RunOptions, dist: DistOptions, on_event: Optional[EventCallback] = None,
                 on_output: Optional[OutputCallback] = None, grace_s: float = DIST_GRACE_S) -> None:
        super().__init__(options, on_event, _without_banner(on_output))
        self.dist = dist
        self.grace_s = grace_s  # between SIGTERM and SIGKILL
        self.marker = uuid.uuid4().hex
        self.rank_pids: dict[int, int] = {}
        self._fifo_dir: Optional[str] = None
        self._keep_open: Optional[int] = None
        self._events_thread: Optional[threading.Thread] = None

    def command(self) -> list[str]:
        options = self.options
        return [options.python, "-m", "torch.distributed.run", *self.dist.torchrun_arguments(), str(BOOTSTRAP),
                str(options.script), *options.args]

    def start(self) -> None:
        options = self.options
        options.out_dir.mkdir(parents=True, exist_ok=True)
        self._fifo_dir = tempfile.mkdtemp(prefix="torchtriage-ranks-")
        fifo = os.path.join(self._fifo_dir, "progress")
        os.mkfifo(fifo, 0o600)
        read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(read_fd, True)
        self._keep_open = os.open(fifo, os.O_WRONLY)  # no end of file before the ranks open their ends
        config = options.agent_config(-1)
        config.update(progress_fd=None, progress_path=fifo, ranks=True)
        if config["active"] is None:  # ranks step together: each must stop after the same steps, not its own window
            config["active"] = RANKS_ACTIVE
        env = dict(os.environ)
        env["TORCHTRIAGE_AGENT"] = json.dumps(config)
        env[MARKER_ENV] = self.marker
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen(
            self.command(), env=env, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        self._events_thread = threading.Thread(target=self._read_events, args=(read_fd,), daemon=True)
        self._events_thread.start()
        self._output_thread = threading.Thread(target=self._read_output, daemon=True)
        self._output_thread.start()

    def _received(self, event: dict[str, Any]) -> None:
        if event.get("event") == "rank" and isinstance(event.get("rank"), int) and isinstance(event.get("pid"), int):
            self.rank_pids[event["rank"]] = event["pid"]
        super()._received(event)

    def stop(self, grace_s: float | None = None) -> None:
        super().stop(self.grace_s if grace_s is None else grace_s)

    def kill_group(self) -> None:
        """SIGKILL torchrun's group, every rank's group and every process marked as this run's; then let
        the progress reader drain the FIFO."""
        if self.proc is None:
            return
        kill_groups(list(self.rank_pids.values()), self.marker)
        super().kill_group()
        kill_groups(list(self.rank_pids.values()), self.marker)
        kill_marked(self.marker)
        if self._keep_open is not None:
            os.close(self._keep_open)
            self._keep_open = None
        if self._events_thread is not None:
            self._events_thread.join(timeout=2.0)
        if self._fifo_dir is not None:
            shutil.rmtree(self._fifo_dir, ignore_errors=True)
            self._fifo_dir = None


def rank_folders(run_dir: Path) -> dict[int, Path]:
    """``rank<k>/`` folders of a run folder, by rank."""
    found = {}
    for folder in run_dir.glob("rank*"):
        suffix = folder.name[len("rank"):]
        if folder.is_dir() and suffix.isdigit():
            found[int(suffix)] = folder
    return dict(sorted(found.items()))


def lead_rank_events(handle: EventCallback) -> EventCallback:
    """A progress callback that passes on the events of this node's local rank 0 only (one bar, not
    one per rank), plus any other rank's end when it did not go as planned."""
    lead: list[int] = []

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "rank" and event.get("local_rank") == 0 and not lead:
            lead.append(event.get("rank"))
        if lead and event.get("rank") == lead[0]:
            handle(event)
        elif event.get("event") == "done" and event.get("status") not in ("completed", "stopped_after_window"):
            handle(dict(event, status=f"rank {event.get('rank')} {event.get('status')}"))

    return on_event


def _without_banner(on_output: Optional[OutputCallback]) -> Optional[OutputCallback]:
    """torchrun's OMP_NUM_THREADS banner is not the script's output (it stays in output.log)."""
    if on_output is None:
        return None

    def output(line: str) -> None:
        if not (line.startswith("*****") and not line.strip("*")) and not line.startswith(TORCHRUN_OMP_NOTE):
            on_output(line)

    return output
