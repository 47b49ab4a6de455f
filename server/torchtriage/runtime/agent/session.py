"""One profiled run of the user's script inside this interpreter.

Lifecycle: install step detection, run the script with ``runpy``; the
profiler follows its schedule; when the active window is saved the trace is
exported (and compressed in a thread), the event tree walked and
``agent.json`` written; then the process ends at once (``os._exit``) unless
``full`` is set.  A script that raises, exits or is terminated still gets
whatever was recorded.  Each stage after the window is announced on the
channel (``phase`` events with a ``stage`` and, while walking, a ``fraction``).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.profiler.python_tracer as python_tracer
from torch.profiler import ProfilerAction, ProfilerActivity, profile

from .channel import Channel, write_json
from .wire import WIRE_VERSION, encode_samples
from .collect import Collector
from .describe import device_name, failed_to_compile, user_traceback
from .losses import LossRecorder, seed_everything
from .memfacts import OptimizerRegistry
from .memsnapshot import CPU_WARNING, SNAPSHOT_NAME, MemorySnapshot
from .resources import resource_records
from .ranks import DdpWatch, rank_identity, tensorboard_name
from .dtypes import DtypeRecorder
from .dynamo_watch import DynamoWatch
from .sampler import FrameSampler
from .signal_sampler import frame_sampler_for
from .shapes import wants_shapes
from .steps import StepDetector, cuda_available
from .tracefile import RAW_NAME, TraceWriter
from .usercode import UserCode, default_roots, import_roots
from .window import Window
from .workers import FLUSH_S, WorkerSampling

RUNPY = ("runpy.py",)  # the frames of runpy.run_path, which starts the script
RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
MAX_EVENTS = 300_000  # profiler events per run: the window is sized to it, the walk stops at it (whole steps); 0: no limit
PROGRESS_S = 0.5  # at most one progress event per this many seconds while walking


class Terminated(BaseException):
    """Raised in the main thread when the parent asks us to stop (SIGTERM)."""


class Session:
    """Holds the profiler, the detector, the sampler and what was recorded."""

    def __init__(self, config: Dict[str, Any], channel: Channel) -> None:
        self.config = config
        self.channel = channel
        self.out_dir: str = config["out_dir"]
        self.script: str = os.path.abspath(config["script"])
        self.agent_dir = os.path.dirname(os.path.abspath(__file__))
        torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
        excluded = [self.agent_dir, torch_dir]
        # the roots the host found (the script's project and folder, the cwd, --user-root), then PYTHONPATH and editable installs
        self.user = UserCode([*(config.get("user_roots") or default_roots(self.script)), *import_roots(excluded)], excluded)
        self.device = self._device()
        self.sampler = FrameSampler(threading.get_ident(), self.user.is_user, config.get("sample_interval_s", 0.001))
        self.detector = StepDetector(self._on_step, self._on_mode)
        self.optimizers = OptimizerRegistry()  # what the training state holds, read when the window ends
        self.workers = WorkerSampling(self.out_dir, self.user.is_user, self.sampler.interval_s)
        # Under torchrun: who this rank is, and what its DDP models do (None otherwise).
        self.identity = rank_identity() if "rank" in config else None
        self.ddp = DdpWatch() if self.identity is not None else None
        self.dynamo = DynamoWatch(self.user.is_user, self.user.absolute, self.detector.hook_codes(),  # torch.compile's compiles, breaks
                                  on_compile=lambda started: self.window.compiling(started))
        self.dtypes = DtypeRecorder(self.user.is_user, self.user.absolute)  # ops mixing float dtypes, casts
        self.prof: Optional[profile] = None
        self.window = Window(config.get("skip_first", 1), config.get("wait", 1), config.get("warmup", 2), config.get("active"),
                             int(config.get("max_events", MAX_EVENTS)), python_frames=config.get("python_frames") or "auto")
        self.sampler = frame_sampler_for(self.window.stackless, self.sampler)
        self.step_hints: List[Tuple[int, int]] = []  # clock readings around each prof.step() that began a recorded step
        self._progress_at = 0.0
        self._stopping_at = 0.0
        self.steps_seen = 0
        self.saved = False
        self.finishing = False
        self.meta: Dict[str, Any] = {}
        self.status: Dict[str, Any] = {"status": "completed", "message": "", "traceback": "", "exit_code": 0}
        self.warnings: List[str] = []
        self.snapshot = self._memory_snapshot()  # --memory-snapshot: the allocator's history over the window (CUDA only)
        self.losses = LossRecorder() if config.get("record_losses") else None  # fix --verify: what each version learns

    # -- setup ---------------------------------------------------------------
    def _device(self) -> str:
        wanted = self.config.get("device", "auto")
        if wanted == "cuda" and not cuda_available():
            raise RuntimeError("--device cuda was asked for but torch.cuda.is_available() is False")
        return "cuda" if wanted == "cuda" or (wanted == "auto" and cuda_available()) else "cpu"

    def _memory_snapshot(self) -> Optional[MemorySnapshot]:
        """What ``--memory-snapshot`` asks for on this device: a snapshot on CUDA, a warning on the CPU."""
        if not self.config.get("memory_snapshot"):
            return None
        if self.device != "cuda":
            self.warnings.append(CPU_WARNING)
            return None
        return MemorySnapshot(self.out_dir)

    def _profiler(self) -> profile:
        activities = [ProfilerActivity.CPU]
        if self.device == "cuda":
            activities.append(ProfilerActivity.CUDA)
        python_tracer._prefix_regex = lambda: []  # absolute file names in the event tree
        return profile(
            activities=activities,
            schedule=self.window,
            on_trace_ready=self._on_trace_ready,
            record_shapes=wants_shapes(self.config, self.device),  # operand sizes of matmuls and convolutions (agent/shapes.py)
            profile_memory=True,
            with_stack=not self.window.stackless,  # Python frames; a heavy step may go without them (agent/window.py)
        )

    # -- callbacks -----------------------------------------------------------
    def _on_mode(self, mode: str) -> None:
        self.meta["step_detection"] = mode
        self.channel.send("mode", mode=mode)

    def _on_step(self) -> None:
        prof = self.prof
        if prof is None or self.saved:
            return
        self.steps_seen += 1
        if self.ddp is not None:
            self.ddp.mark_step()
        self.window.before_step()  # a counted step ends: the window may get shorter, or lose its Python frames
        if self.window.stackless and prof.with_stack:
            prof.with_stack = False  # read when the profiler starts, in this prof.step() at the earliest
            self.sampler = frame_sampler_for(True, self.sampler)  # the samples alone name the lines: unbiased ones
        self._warn(self.window.note())
        if self.dtypes.wants_shapes and not prof.record_shapes and self.config.get("record_shapes", "auto") in (None, "auto"):
            prof.record_shapes = True  # 16-bit parameters: read op inputs for dtype churn (from the warm-up on)
        self.window.recorded_step_ends(prof.step_num, self.detector.loader_workers)  # an adaptive window may end next step
        if prof.current_action == ProfilerAction.RECORD_AND_SAVE:  # this step() ends the window
            self._stage("stopping the profiler")
            self._stopping_at = time.perf_counter()
        before = time.time_ns()
        prof.step()
        after = time.time_ns()
        if self.saved:
            return
        self.window.after_step(prof.step_num)
        action = prof.current_action
        self.window.step_begins(action)
        if action in RECORDING:
            self.step_hints.append((before, after))
            self.sampler.start()
            self._start_snapshot()
        phase = {ProfilerAction.WARMUP: "warmup", ProfilerAction.NONE: "waiting"}.get(action, "recording")
        self.channel.send("step", step=self.steps_seen, phase=phase, active=self.window.active)

    def _on_trace_ready(self, prof: profile) -> None:
        self.sampler.stop()
        self.window.stop()
        self.saved = True
        self.detector.uninstall()
        self.workers.uninstall()
        if self._stopping_at:
            self.meta["stop_s"] = round(time.perf_counter() - self._stopping_at, 3)
        previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            self._stop_snapshot()
            self._save(prof)
        finally:
            signal.signal(signal.SIGTERM, previous)
        if not self.config.get("full") and not self.finishing:
            self.status.update(status="stopped_after_window", message="stopped once the active window was recorded")
            self._write_agent_json()
            self.channel.done_and_exit(self.status["status"])

    # -- memory snapshot -----------------------------------------------------
    def _start_snapshot(self) -> None:
        """The window records: start the allocator's history (once; a failure is a warning)."""
        if self.snapshot is not None:
            self._warn(self.snapshot.start())

    def _stop_snapshot(self) -> None:
        """The window ended: save the snapshot into the run folder and stop the history."""
        if self.snapshot is None or not self.snapshot.recording:
            return
        self._stage("saving the CUDA memory snapshot")
        self._warn(self.snapshot.stop())
        if self.snapshot.saved:
            self.meta["memory_snapshot"] = SNAPSHOT_NAME

    def _warn(self, warning: Optional[str]) -> None:
        """Keep a warning for agent.json, once."""
        if warning and warning not in self.warnings:
            self.warnings.append(warning)

    # -- outputs -------------------------------------------------------------
    def _stage(self, stage: str, fraction: Optional[float] = None) -> None:
        """Announce a stage of the work after the window (with how far it is, when known)."""
        fields: Dict[str, Any] = {"phase": "analysing", "stage": stage}
        if fraction is not None:
            fields["fraction"] = round(fraction, 3)
        self.channel.send("phase", **fields)

    def _walked(self, fraction: float) -> None:
        now = time.monotonic()
        if now - self._progress_at >= PROGRESS_S:
            self._progress_at = now
            self._stage("attributing events to lines", fraction)

    def _save(self, prof: profile) -> None:
        timings: Dict[str, float] = {}
        started = time.perf_counter()
        self._stage("exporting the trace")
        writer: Optional[TraceWriter] = TraceWriter(self.out_dir, self.config.get("run_name", "run"), self._tb_path())
        try:
            prof.export_chrome_trace(os.path.join(self.out_dir, RAW_NAME))
            writer.start()  # compresses while the tree is walked
        except Exception as exc:  # keep the attribution even if the export fails
            self.warnings.append(f"trace export failed: {exc}")
            writer = None
        timings["export_s"] = time.perf_counter() - started
        started = time.perf_counter()
        self._stage("attributing events to lines", 0.0)
        collector = Collector(self.user, self.agent_dir, max_events=int(self.config.get("max_events", MAX_EVENTS)), progress=self._walked,
                              dtypes=self.dtypes if prof.record_shapes else None,  # dtypes need the ops' inputs
                              python_frames=bool(prof.with_stack), sample_interval_s=self.sampler.interval_s)
        tree = prof.profiler.kineto_results.experimental_event_tree()
        # An adaptive window the script ended: its last "step" is what ran after the last step boundary, not a step.
        complete = len(self.window.durations_ms) if self.finishing and self.window.adaptive else None
        collector.collect(tree, self.step_hints, complete_steps=complete or None)
        timings["collect_s"] = time.perf_counter() - started
        self.meta["events"] = collector.events
        self.meta["record_shapes"] = bool(prof.record_shapes)
        self.meta["events_per_plain_step"] = self.window.events_per_step
        self.meta["active_steps"] = self.window.active
        self.meta["window"] = self.window.summary()
        cut_ns = None
        if len(collector.steps) < collector.steps_recorded:
            cut_ns = collector.steps[-1].end_ns
            self.warnings.append(
                f"the recorded window had more than {collector.max_events:,} profiler events: the report and the trace "
                f"cover the first {len(collector.steps)} of {collector.steps_recorded} recorded steps "
                f"({collector.steps_recorded - len(collector.steps)} dropped; --max-events raises the limit)"
            )
            self.meta["steps_dropped"] = collector.steps_recorded - len(collector.steps)
        sampled = collector.sampled_charges(self.sampler.samples)  # (before ``result``: their lines join its sites)
        self.raw = collector.result()
        self.raw["sampled_charges"] = sampled
        self.raw["dtype_events"] = self.dtypes.records(len(collector.steps))
        self.raw.update(resource_records(tree, collector, self.user, self.optimizers, self.device))
        strings: Dict[str, int] = {}
        self.raw["samples"] = encode_samples(self.sampler.samples, self.user.absolute, strings)
        if os.path.isdir(self.workers.folder):
            time.sleep(2 * FLUSH_S)  # let forked loader workers write their last samples
            self.raw["worker_samples"] = encode_samples(self.workers.samples(), self.user.absolute, strings)
        self.raw["strings"] = list(strings)
        if writer is not None:
            started = time.perf_counter()
            self._stage("compressing the trace")
            warning = writer.finish(cut_ns)
            if warning:
                self.warnings.append(warning)
            self.meta["trace_dataloader_events"] = writer.relabelled
            timings["compress_wait_s"] = time.perf_counter() - started
        self.meta.update({k: round(v, 3) for k, v in timings.items()})

    def _tb_path(self) -> Optional[str]:
        """A rank's trace goes into the run's shared ``tb/<run>/`` folder under its rank's name."""
        if self.identity is None:
            return None
        root = self.config.get("root_dir") or os.path.dirname(self.out_dir)
        return os.path.join(root, "tb", self.config.get("run_name", "run"), tensorboard_name(self.identity))

    def _write_agent_json(self) -> None:
        data = dict(getattr(self, "raw", {}) or {})
        data["meta"] = dict(
            self.meta,
            script=self.script,
            argv=list(sys.argv),
            cwd=os.getcwd(),
            device=self.device,
            device_name=device_name(self.device),
            torch_version=torch.__version__,
            python=sys.version.split()[0],
            executable=sys.executable,
            loader_workers=self.detector.loader_workers,
            steps_seen=self.steps_seen,
            user_roots=self.user.roots,
            sample_interval_s=self.sampler.interval_s,
            ended_at=self.meta.get("ended_at") or time.time(),
        )
        if self.identity is not None:
            data["meta"]["rank"] = self.identity
        if self.ddp is not None:
            data["meta"]["ddp"] = self.ddp.record()
        data["compiles"] = self.dynamo.compiles()
        data["graph_breaks"] = self.dynamo.breaks
        dynamo = self.dynamo.summary()
        if dynamo:
            data["meta"]["dynamo"] = dynamo
        if self.losses is not None:
            data["losses"] = self.losses.values()
        data["wire_version"] = WIRE_VERSION
        data["status"] = self.status
        data["warnings"] = self.warnings
        self._stage("writing agent.json")
        write_json(os.path.join(self.out_dir, "agent.json"), data)

    # -- running -------------------------------------------------------------
    def run(self) -> int:
        import runpy

        signal.signal(signal.SIGTERM, _raise_terminated)
        self.prof = self._profiler()
        if self.identity is not None:
            self.channel.send("rank", **self.identity)
        if self.ddp is not None:
            self.ddp.install()
        self.dtypes.install()  # before the detector: its optimizer hook decides record_shapes before a step starts the warm-up
        self.detector.install()
        self.optimizers.install()
        self.workers.install()
        self.dynamo.install()
        if self.losses is not None:
            self.losses.install()
        seed_everything(self.config.get("seed"))
        self.prof.start()
        self.channel.send("phase", phase="running", device=self.device)
        code = 0
        try:
            runpy.run_path(self.script, run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code not in (None, 0):
                self.status.update(status="exited", message=f"the script called sys.exit({exc.code!r})", exit_code=code)
                if not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
        except SyntaxError as exc:
            code = 1
            if failed_to_compile(exc, self.script):
                self.status.update(status="syntax_error", message=f"syntax error: {exc.msg} ({exc.filename}:{exc.lineno})",
                                   traceback=user_traceback(exc, self.agent_dir, RUNPY), exit_code=1)
            else:  # the running script raised it (literal_eval of an argument, an import of a broken module)
                self._raised(exc)
        except Terminated:
            code = 143
            self.status.update(status="killed", message="terminated by torchtriage (timeout or interrupt)", exit_code=code)
        except KeyboardInterrupt:
            code = 130
            self.status.update(status="interrupted", message="interrupted", exit_code=code)
        except BaseException as exc:  # the user's script raised: keep what was recorded
            code = 1
            self._raised(exc)
        self._finish()
        return code

    def _raised(self, exc: BaseException) -> None:
        """The script raised ``exc`` (any type): its traceback, without our frames, on stderr and in the status."""
        text = user_traceback(exc, self.agent_dir, RUNPY)
        sys.stderr.write(text)
        self.status.update(status="raised", message=f"{type(exc).__name__}: {exc}", traceback=text, exit_code=1)

    def _finish(self) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        self.meta.setdefault("ended_at", time.time())  # when the script ended (ranks are ordered by it)
        self.finishing = True
        self.window.stop()
        self.detector.uninstall()
        self.dtypes.uninstall()
        self.optimizers.uninstall()
        if self.losses is not None:
            self.losses.uninstall()
        if not self.saved and self.prof is not None:
            recording = self.prof.current_action in RECORDING
            if recording and self.window.adaptive:
                self.warnings.append(self.window.ended_early_note())
            elif recording:
                self.warnings.append("the script ended before the active window was complete: the report covers the steps recorded so far")
                self._stage("stopping the profiler")
                self._stopping_at = time.perf_counter()
            try:
                self.prof.stop()  # saves a partial window through on_trace_ready when recording
            except Exception as exc:
                self.warnings.append(f"stopping the profiler failed: {exc}")
            if not recording and self.steps_seen == 0 and self.status["status"] == "completed":
                self.status.update(status="no_steps", message="the script finished without an optimizer step, loader iteration or forward call")
        self.sampler.stop()
        self._stop_snapshot()  # still recording only when the profiler failed to stop: keep the snapshot all the same
        self._write_agent_json()
        self.channel.send("done", status=self.status["status"])


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()
