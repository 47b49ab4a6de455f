"""Profile a piece of code inside the running interpreter (a Jupyter kernel), keeping its state.

The script agent (``session.py``) owns a whole process: it runs a script with
``runpy`` and ends the process once the window is saved.  Here the caller owns
the process and hands us a callable (a notebook cell); the same pieces do the
work: ``StepDetector`` finds the steps, the profiler follows the same
schedule, ``FrameSampler`` names operator-slot lines and ``Collector`` charges
the event tree to user sites.

Two phases.  The cell starts *whole*: everything is recorded as one step
(``ProfilerStep#0``), which is the profile when the cell never steps (no
loop).  At the first detected step that recording is dropped and a scheduled
profiler starts, as for a script; once its active window is saved the cell is
stopped (``WindowDone``) unless ``full`` is set.  A cell that raises, is
interrupted or times out keeps what was recorded, and the interpreter lives on.

Standard library and torch only, like the rest of the agent.
"""

from __future__ import annotations

import _thread
import os
import shutil
import socket
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import torch
import torch.profiler.python_tracer as python_tracer
from torch.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule

from .channel import write_json
from .collect import Collector
from .describe import device_name, user_traceback
from .memfacts import OptimizerRegistry
from .resources import resource_records
from .sampler import FrameSampler
from .shapes import wants_shapes
from .steps import StepDetector, cuda_available
from .usercode import UserCode
from .wire import WIRE_VERSION, encode_samples

RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class WindowDone(BaseException):
    """Raised through the user's code once the active window is saved (the cell stops there)."""


class TimedOut(BaseException):
    """Stands for the KeyboardInterrupt our own timer sent."""


class CellProfiler:
    """One profiled call.  ``run(fn)`` returns the agent.json dict (also written to ``out_dir``)."""

    def __init__(self, config: Dict[str, Any], user_roots: List[str], excluded: List[str], ignored_dir: str) -> None:
        """``excluded``: folders whose code is never the user's (our own package, torch);
        ``ignored_dir``: frames under it are profiler overhead, not work (our package)."""
        self.config = config
        self.out_dir: str = config["out_dir"]
        self.ignored_dir = ignored_dir
        self.user = UserCode(user_roots, excluded)
        self.device = self._device()
        self.sampler = FrameSampler(threading.get_ident(), self.user.is_user, config.get("sample_interval_s", 0.001))
        self.detector = StepDetector(self._on_step, self._on_mode)
        self.optimizers = OptimizerRegistry()  # what the training state holds, read when the window ends
        self.prof: Optional[profile] = None
        self.whole: Optional[record_function] = None
        self.phase = "whole"  # whole -> scheduled -> saved
        self.steps_seen = 0
        self.raw: Dict[str, Any] = {}
        self.meta: Dict[str, Any] = {"step_detection": "cell"}
        self.status: Dict[str, Any] = {"status": "completed", "message": "", "traceback": "", "exit_code": 0}
        self.warnings: List[str] = []
        self._timer: Optional[threading.Timer] = None
        self._timed_out = False

    def _device(self) -> str:
        wanted = self.config.get("device", "auto")
        if wanted == "cuda" and not cuda_available():
            raise RuntimeError("--device cuda was asked for but torch.cuda.is_available() is False")
        return "cuda" if wanted == "cuda" or (wanted == "auto" and cuda_available()) else "cpu"

    def _profiler(self, scheduled: bool) -> profile:
        activities = [ProfilerActivity.CPU]
        if self.device == "cuda":
            activities.append(ProfilerActivity.CUDA)
        python_tracer._prefix_regex = lambda: []  # absolute file names in the event tree
        sched = None
        if scheduled:  # the first step already ran in the whole phase: it counts as skipped
            sched = schedule(skip_first=max(0, self.config.get("skip_first", 1) - 1), wait=self.config.get("wait", 1),
                             warmup=self.config.get("warmup", 2), active=self.config.get("active", 5), repeat=1)
        return profile(activities=activities, schedule=sched, on_trace_ready=self._on_trace_ready,
                       record_shapes=wants_shapes(self.config, self.device), profile_memory=True, with_stack=True)

    # -- callbacks -----------------------------------------------------------
    def _on_mode(self, mode: str) -> None:
        self.meta["step_detection"] = mode

    def _on_step(self) -> None:
        self.steps_seen += 1
        if self.phase == "whole":
            self._drop_whole()
            self.phase = "scheduled"
            self.prof = self._profiler(scheduled=True)
            self.prof.start()
            return
        prof = self.prof
        if self.phase != "scheduled" or prof is None:
            return
        prof.step()
        if self.phase == "saved":
            if not self.config.get("full"):
                raise WindowDone()
            return
        if prof.current_action in RECORDING:
            self.sampler.start()

    def _drop_whole(self) -> None:
        """The cell steps: the whole-cell recording so far is not needed."""
        prof, self.prof = self.prof, None
        self.phase = "dropping"
        self._close_whole()
        self.sampler.stop()
        self.sampler.samples.clear()
        if prof is not None:
            prof.stop()

    def _close_whole(self) -> None:
        if self.whole is not None:
            whole, self.whole = self.whole, None
            whole.__exit__(None, None, None)

    def _on_trace_ready(self, prof: profile) -> None:
        if self.phase == "dropping":
            return
        self.sampler.stop()
        self.detector.uninstall()
        self.phase = "saved"
        self._save(prof)

    def _save(self, prof: profile) -> None:
        trace = os.path.join(self.out_dir, "trace.json")
        try:
            prof.export_chrome_trace(trace)
            tb_dir = os.path.join(self.out_dir, "tb", self.config.get("run_name", "cell"))
            os.makedirs(tb_dir, exist_ok=True)
            shutil.copyfile(trace, os.path.join(tb_dir, f"{socket.gethostname()}.{os.getpid()}.pt.trace.json"))
        except Exception as exc:  # keep the attribution even if the export fails
            self.warnings.append(f"trace export failed: {exc}")
        started = time.perf_counter()
        collector = Collector(self.user, self.ignored_dir)
        tree = prof.profiler.kineto_results.experimental_event_tree()
        collector.collect(tree)
        self.meta["collect_s"] = round(time.perf_counter() - started, 3)
        self.raw = collector.result()
        self.raw.update(resource_records(tree, collector, self.user, self.optimizers, self.device))
        strings: Dict[str, int] = {}
        self.raw["samples"] = encode_samples(self.sampler.samples, self.user.absolute, strings)
        self.raw["strings"] = list(strings)

    # -- running -------------------------------------------------------------
    def run(self, fn: Callable[[], Any]) -> Dict[str, Any]:
        os.makedirs(self.out_dir, exist_ok=True)
        timeout = self.config.get("timeout_s")
        if timeout:
            self._timer = threading.Timer(float(timeout), self._time_out)
            self._timer.daemon = True
            self._timer.start()
        try:
            self._run(fn)
        finally:
            if self._timer is not None:
                self._timer.cancel()
        self._finish()
        return self._agent_json()

    def _time_out(self) -> None:
        self._timed_out = True
        _thread.interrupt_main()

    def _run(self, fn: Callable[[], Any]) -> None:
        self.detector.install()
        self.optimizers.install()
        self.prof = self._profiler(scheduled=False)
        self.prof.start()
        self.sampler.start()
        self.whole = record_function("ProfilerStep#0")
        self.whole.__enter__()
        try:
            fn()
        except WindowDone:
            self.status.update(status="stopped_after_window",
                               message="stopped once the active window was recorded (--full runs the cell to its end)")
        except KeyboardInterrupt:
            if self._timed_out:
                self.status.update(status="timeout", message=f"stopped after --timeout {self.config.get('timeout_s')} s; the recorded window is kept", exit_code=124)
            else:
                self.status.update(status="interrupted", message="interrupted: the recorded window is kept", exit_code=130)
        except SystemExit as exc:
            self.status.update(status="exited", message=f"the cell called sys.exit({exc.code!r})", exit_code=1)
        except BaseException as exc:  # the cell raised: keep what was recorded
            text = user_traceback(exc, self.ignored_dir)
            self.status.update(status="raised", message=f"{type(exc).__name__}: {exc}", traceback=text, exit_code=1)

    def _finish(self) -> None:
        self.detector.uninstall()
        self.optimizers.uninstall()
        if self.phase == "whole":
            self._close_whole()
        prof = self.prof
        if self.phase in ("whole", "scheduled") and prof is not None:
            recording = self.phase == "whole" or prof.current_action in RECORDING
            if recording and self.phase == "scheduled":
                self.warnings.append("the cell ended before the active window was complete: the report covers the steps recorded so far")
            try:
                prof.stop()  # saves the whole cell, or a partial window, through on_trace_ready
            except Exception as exc:
                self.warnings.append(f"stopping the profiler failed: {exc}")
            if not recording and self.status["status"] == "completed":
                needed = sum(self.config.get(k, d) for k, d in (("skip_first", 1), ("wait", 1), ("warmup", 2))) + 1
                self.status.update(status="no_steps", message=(
                    f"the cell ran {self.steps_seen} step(s), fewer than the {needed} the schedule needs before it records: "
                    "lower --skip-first/--wait/--warmup, or run more steps"))
        self.sampler.stop()

    def _agent_json(self) -> Dict[str, Any]:
        data = dict(self.raw)
        data["meta"] = dict(
            self.meta,
            device=self.device,
            device_name=device_name(self.device),
            torch_version=torch.__version__,
            python=sys.version.split()[0],
            executable=sys.executable,
            loader_workers=self.detector.loader_workers,
            steps_seen=max(self.steps_seen, 1 if data.get("steps") else 0),
            user_roots=self.user.roots,
            sample_interval_s=self.sampler.interval_s,
            **self.config.get("meta", {}),
        )
        data["wire_version"] = WIRE_VERSION
        data["status"] = self.status
        data["warnings"] = self.warnings
        write_json(os.path.join(self.out_dir, "agent.json"), data)
        return data
