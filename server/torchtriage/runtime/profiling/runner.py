"""Run the user's script under the agent in a child process, and always clean up.

The child is the chosen interpreter running ``agent/bootstrap.py`` in its own
session (process group), with the user's cwd, argv and environment.  Progress
arrives as JSON lines on a pipe; the script's output is kept in
``output.log`` and passed to a callback.  Timeouts, the no-step watchdog and
Ctrl-C first send SIGTERM to the child (the agent then saves what it recorded),
then SIGKILL to the whole group, so no process outlives a run.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .groups import signal_group
from .noise import is_profiler_noise
from .user_roots import host_user_roots

AGENT_DIR = Path(__file__).resolve().parent.parent / "agent"
BOOTSTRAP = AGENT_DIR / "bootstrap.py"
AGENT_JSON = "agent.json"
OUTPUT_LOG = "output.log"
GRACE_S = 5.0


@dataclass
class RunOptions:
    script: Path
    args: list[str]
    out_dir: Path
    python: str
    run_name: str = "run"
    skip_first: int = 1
    wait: int = 1
    warmup: int = 2
    active: Optional[int] = None  # None: record until the mean step is known to 5% (agent/window.py)
    device: str = "auto"
    full: bool = False
    user_roots: list[Path] = field(default_factory=list)  # --user-root: more folders of user code (user_roots.py)
    timeout_s: Optional[float] = None
    no_step_timeout_s: Optional[float] = 60.0
    sample_interval_ms: float = 1.0
    max_events: int = 300_000  # profiler events per run (fewer recorded steps when steps are heavy); 0: no limit
    record_shapes: str = "auto"  # operand shapes of matmuls/convolutions: "auto" (CUDA runs only), "on", "off"
    python_frames: str = "auto"  # Python frames: "auto" (unless the event budget is too small for them), "on", "off"
    memory_snapshot: bool = False  # CUDA runs: the allocator's history over the window as memory_snapshot.pickle
    seed: Optional[int] = None  # seed Python, NumPy and torch before the script starts (fix --verify)
    record_losses: bool = False  # keep every backward pass's loss in agent.json's "losses" (fix --verify)

    def agent_config(self, progress_fd: int) -> dict[str, Any]:
        return {
            "out_dir": str(self.out_dir),
            "run_name": self.run_name,
            "user_roots": host_user_roots(self.script, Path.cwd(), self.user_roots),  # the child runs in this cwd
            "skip_first": self.skip_first,
            "wait": self.wait,
            "warmup": self.warmup,
            "active": self.active,
            "device": self.device,
            "full": self.full,
            "sample_interval_s": self.sample_interval_ms / 1000.0,
            "max_events": self.max_events,
            "record_shapes": {"on": True, "off": False}.get(self.record_shapes, "auto"),
            "python_frames": self.python_frames,
            "memory_snapshot": self.memory_snapshot,
            "seed": self.seed,
            "record_losses": self.record_losses,
            "progress_fd": progress_fd,
        }


@dataclass
class RunOutcome:
    """What happened to the child, from the outside."""

    returncode: Optional[int]
    reason: str = ""  # "" | "timeout" | "no_steps" | "interrupted"
    message: str = ""
    pid: int = 0
    agent: Optional[dict[str, Any]] = None  # agent.json, when written
    events: list[dict[str, Any]] = field(default_factory=list)
    log_path: Optional[Path] = None


EventCallback = Callable[[dict[str, Any]], None]
OutputCallback = Callable[[str], None]


class ChildRun:
    """One child process and the threads that read from it."""

    def __init__(self, options: RunOptions, on_event: Optional[EventCallback] = None, on_output: Optional[OutputCallback] = None) -> None:
        self.options = options
        self.on_event = on_event
        self.on_output = on_output
        self.events: "queue.Queue[dict[str, Any]]" = queue.Queue()
        self.proc: Optional[subprocess.Popen[bytes]] = None

    def start(self) -> None:
        options = self.options
        options.out_dir.mkdir(parents=True, exist_ok=True)
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env["TORCHTRIAGE_AGENT"] = json.dumps(options.agent_config(write_fd))
        env.setdefault("PYTHONUNBUFFERED", "1")
        command = [options.python, str(BOOTSTRAP), str(options.script), *options.args]
        try:
            self.proc = subprocess.Popen(
                command, env=env, pass_fds=(write_fd,), start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            )
        finally:
            os.close(write_fd)
        threading.Thread(target=self._read_events, args=(read_fd,), daemon=True).start()
        self._output_thread = threading.Thread(target=self._read_output, daemon=True)
        self._output_thread.start()

    def _read_events(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for raw in pipe:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    self._received(event)

    def _received(self, event: dict[str, Any]) -> None:
        """One progress event of the script, queued for the run loop (a subclass notes what it needs first)."""
        self.events.put(event)

    def _read_output(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        with open(self.options.out_dir / OUTPUT_LOG, "wb") as log:
            for raw in self.proc.stdout:
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if self.on_output is not None and not is_profiler_noise(line):
                    self.on_output(line)

    def stop(self, grace_s: float = GRACE_S) -> None:
        """SIGTERM to the child (it saves what it has), then SIGKILL to the whole group."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.kill(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        self.kill_group()

    def kill_group(self) -> None:
        proc = self.proc
        if proc is None:
            return
        signal_group(proc.pid, signal.SIGKILL)  # the group id is the child's pid (new session)
        proc.wait()
        self._output_thread.join(timeout=2.0)


def run_agent(
    options: RunOptions, on_event: Optional[EventCallback] = None, on_output: Optional[OutputCallback] = None,
    child: Optional[ChildRun] = None,
) -> RunOutcome:
    """Run the script to the end of the window (or its end, a fault or a limit).

    ``child``: another way to start it (``distributed.launch.TorchrunChild`` runs
    torchrun with the agent in every rank); the limits and the clean-up are the same."""
    child = child or ChildRun(options, on_event, on_output)
    child.start()
    assert child.proc is not None
    outcome = RunOutcome(returncode=None, pid=child.proc.pid, log_path=options.out_dir / OUTPUT_LOG)
    started = time.monotonic()
    stepped = False
    try:
        while True:
            stepped = _drain(child, outcome, stepped)
            if child.proc.poll() is not None:
                break
            elapsed = time.monotonic() - started
            if options.timeout_s is not None and elapsed > options.timeout_s:
                outcome.reason, outcome.message = "timeout", f"the script ran past --timeout {options.timeout_s:g} s and was stopped"
                child.stop()
                break
            if not stepped and options.no_step_timeout_s is not None and elapsed > options.no_step_timeout_s:
                outcome.reason = "no_steps"
                outcome.message = (
                    f"no optimizer step or loader iteration seen in {options.no_step_timeout_s:g} s "
                    "(raise --no-step-timeout if start-up is slow)"
                )
                child.stop()
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        outcome.reason, outcome.message = "interrupted", "interrupted (Ctrl-C)"
        child.stop()
    finally:
        child.kill_group()
    _drain(child, outcome, stepped)
    outcome.returncode = child.proc.returncode
    agent_json = options.out_dir / AGENT_JSON
    if agent_json.exists():
        try:
            outcome.agent = json.loads(agent_json.read_text(encoding="utf-8"))
        except ValueError:
            outcome.agent = None
    return outcome


def _drain(child: ChildRun, outcome: RunOutcome, stepped: bool) -> bool:
    while True:
        try:
            event = child.events.get_nowait()
        except queue.Empty:
            return stepped
        outcome.events.append(event)
        stepped = stepped or event.get("event") == "step"
        if child.on_event is not None:
            child.on_event(event)
