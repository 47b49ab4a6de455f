"""One lab run of the user's script: one configuration, measured, then stopped.

Lifecycle: seed the random generators, install step detection, the trained
model wrapper (autocast / compile), the backward tap and the compile watch,
then run the script with ``runpy``.  Steps are counted by the profiler's
``StepDetector``: the ``warmup``-th detected step starts the clock, the next
``steps`` are measured, and after the last one the losses are read (one sync),
``agent.json`` is written and the process ends at once (``os._exit``).  A
script that raises, exits, ends early or is terminated still gets what was
measured, with the failure named (``status.failure``).
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from typing import Any, Dict, List, Optional

import torch

from ..channel import Channel, write_json
from ..describe import device_name, failed_to_compile, user_traceback
from .backward import BackwardTap
from .compile_stats import CompileWatch, dynamo_counts
from .measure import PeakMemory, now
from .trained_models import TrainedModels, UnsupportedPrecision
from .wire import LAB_WIRE_VERSION, LabResult
from ..steps import StepDetector, cuda_available

RUNPY = ("runpy.py",)
COMPILER_MODULES = ("torch._dynamo", "torch._inductor", "torch._functorch", "torch._subclasses")


class Terminated(BaseException):
    """Raised in the main thread when the parent asks us to stop (SIGTERM)."""


def failure_kind(exc: BaseException) -> str:
    """What kind of failure an exception from the script is (the cause chain included)."""
    seen: List[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    for item in seen:
        if isinstance(item, UnsupportedPrecision):
            return "unsupported_dtype"
        if isinstance(item, (torch.OutOfMemoryError, MemoryError)):
            return "out_of_memory"
    for item in seen:
        if type(item).__module__.startswith(COMPILER_MODULES):
            return "compile_failed"
    text = " ".join(str(item) for item in seen)
    if any(name in text for name in ("BFloat16", "Half", "bfloat16", "float16")) and (
        "not implemented" in text or "not supported" in text or "expected scalar type" in text.lower()
    ):
        return "unsupported_dtype"
    return "raised"


class LabSession:
    """Counts steps, times the measured ones, and writes one ``LabResult``."""

    def __init__(self, config: Dict[str, Any], channel: Channel) -> None:
        lab = config["lab"]
        self.config = config
        self.channel = channel
        self.out_dir: str = config["out_dir"]
        self.script: str = os.path.abspath(config["script"])
        self.agent_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the agent folder, this one's parent
        self.precision: str = lab.get("precision", "fp32")
        self.compile_mode: Optional[str] = lab.get("compile_mode")
        self.warmup = max(1, int(lab.get("warmup", 5)))
        self.steps = max(1, int(lab.get("steps", 30)))
        self.seed: Optional[int] = lab.get("seed")
        self.detector = StepDetector(self._on_step, self._on_mode)
        self.models = TrainedModels(self.precision, self.compile_mode)
        self.tap = BackwardTap(scale_losses=self.precision == "fp16")
        self.compiles = CompileWatch()
        self.memory = PeakMemory()
        self.mode: Optional[str] = None
        self.steps_seen = 0
        self.last_clock = 0.0
        self.window_started = False
        self.step_times: List[float] = []
        self.batch_sizes: List[int] = []
        self.losses: List[Optional[torch.Tensor]] = []
        self.compile_in_window = 0.0
        self.notes: List[str] = []
        self.finished = False
        self.status: Dict[str, Any] = {"status": "completed", "message": "", "traceback": "", "exit_code": 0, "failure": ""}

    # -- steps -------------------------------------------------------------------
    def _on_mode(self, mode: str) -> None:
        self.mode = mode
        self.channel.send("mode", mode=mode)

    def _on_step(self) -> None:
        if self.finished:
            return
        self.steps_seen += 1
        batch = self.models.take_step()
        loss, self.tap.last = self.tap.last, None
        if self.steps_seen < self.warmup:
            self.channel.send("step", step=self.steps_seen, phase="warmup", warmup=self.warmup, steps=self.steps)
            return
        clock = now(self.models.device)
        if self.steps_seen == self.warmup:  # the clock starts at the end of the last warm-up step
            self.memory.start(self.models.device)
            self.models.calls = self.models.compiled_calls = 0
            self.window_started = True
            self.channel.send("step", step=self.steps_seen, phase="warmup", warmup=self.warmup, steps=self.steps)
        else:
            compiling = self.compiles.within(self.last_clock, clock)
            self.compile_in_window += compiling
            self.step_times.append(max(0.0, clock - self.last_clock - compiling))
            self.batch_sizes.append(batch or 0)
            self.losses.append(loss)
            measured = len(self.step_times)
            self.channel.send("step", step=self.steps_seen, phase="measuring", measured=measured, steps=self.steps)
            if measured >= self.steps:
                self._stop_after_window()
                return
        self.last_clock = time.perf_counter()  # our own bookkeeping stays out of the next step

    def _stop_after_window(self) -> None:
        self.finished = True
        self.status.update(status="stopped_after_window", message="stopped once the measured steps were done")
        self._write_agent_json()
        self.channel.done_and_exit(self.status["status"])

    # -- results -------------------------------------------------------------------
    def _loss_values(self) -> List[Optional[float]]:
        present = [loss for loss in self.losses if loss is not None]
        try:
            values = iter(torch.stack([loss.float().reshape(()).to(present[0].device) for loss in present]).tolist()) if present else iter(())
        except Exception as exc:  # losses on several devices or of odd shapes
            self.notes.append(f"the losses could not be read: {exc}")
            return [None] * len(self.losses)
        return [next(values) if loss is not None else None for loss in self.losses]

    def _result(self) -> LabResult:
        peak, measure = self.memory.read() if self.window_started else (None, None)
        if self.memory.note:
            self.notes.append(self.memory.note)
        counts = dynamo_counts()
        models = self.models
        self.notes += [note for note in models.notes if note not in self.notes]
        if not models.names:
            self.notes.append("no module whose parameters an optimizer owns was called: autocast and compile were not applied")
        device = models.device or ("cuda" if cuda_available() and self.config.get("device") != "cpu" else "cpu")
        return LabResult(
            precision=self.precision, compile_mode=self.compile_mode, device=device, device_name=device_name(device),
            step_detection=self.mode, steps_seen=self.steps_seen, warmup=self.warmup, steps=self.steps,
            step_times_s=[round(t, 9) for t in self.step_times], compile_s=round(self.compiles.seconds(), 6),
            compile_in_window_s=round(self.compile_in_window, 6), compiles=len(self.compiles.intervals),
            recompiles=self.compiles.recompiles(), graph_breaks=counts["graph_breaks"], graphs=counts["graphs"],
            batch_sizes=list(self.batch_sizes), peak_memory_bytes=peak, memory_measure=measure, losses=self._loss_values(),
            output_dtype=models.output_dtype, models=list(models.names), model_calls=models.calls,
            compiled_calls=models.compiled_calls, scaler_skipped_steps=self.tap.skipped_steps,
            script_autocast=models.script_autocast, script_scaler=self.tap.script_scaler, notes=list(self.notes),
        )

    def _write_agent_json(self) -> None:
        try:
            lab = self._result()._asdict()
        except Exception as exc:  # a measurement bug must not lose the status
            lab = LabResult(notes=[f"the lab agent could not assemble its result: {type(exc).__name__}: {exc}"])._asdict()
        data = {
            "lab_wire_version": LAB_WIRE_VERSION,
            "status": self.status,
            "lab": lab,
            "meta": {
                "script": self.script, "argv": list(sys.argv), "cwd": os.getcwd(), "device": lab["device"],
                "device_name": lab["device_name"], "torch_version": torch.__version__, "python": sys.version.split()[0],
                "executable": sys.executable, "steps_seen": self.steps_seen, "step_detection": self.mode,
            },
            "warnings": [],
        }
        write_json(os.path.join(self.out_dir, "agent.json"), data)

    # -- running -------------------------------------------------------------------
    def _seed(self) -> None:
        if self.seed is None:
            return
        random.seed(self.seed)
        torch.manual_seed(self.seed)
        try:
            import numpy

            numpy.random.seed(self.seed)
        except ImportError:
            pass

    def run(self) -> int:
        import runpy

        signal.signal(signal.SIGTERM, _raise_terminated)
        self._seed()
        self.compiles.install()
        self.tap.install()
        self.models.install()
        self.detector.install()
        self.channel.send("phase", phase="running", precision=self.precision, compile_mode=self.compile_mode)
        code = 0
        try:
            runpy.run_path(self.script, run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code not in (None, 0):
                self.status.update(status="exited", message=f"the script called sys.exit({exc.code!r})", exit_code=code, failure="exited")
        except SyntaxError as exc:
            code = 1
            if failed_to_compile(exc, self.script):
                self.status.update(status="syntax_error", message=f"syntax error: {exc.msg} ({exc.filename}:{exc.lineno})",
                                   traceback=user_traceback(exc, self.agent_dir, RUNPY), exit_code=1, failure="syntax_error")
            else:  # the running script raised it (literal_eval of an argument, an import of a broken module)
                self._raised(exc)
        except Terminated:
            code = 143
            self.status.update(status="killed", message="terminated by torchtriage (timeout or interrupt)", exit_code=code, failure="killed")
        except KeyboardInterrupt:
            code = 130
            self.status.update(status="interrupted", message="interrupted", exit_code=code, failure="interrupted")
        except BaseException as exc:  # the script (or its compiled model) raised: keep what was measured
            code = 1
            self._raised(exc)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        self.finished = True
        self.detector.uninstall()
        self.models.uninstall()
        self.tap.uninstall()
        self.compiles.uninstall()
        self._write_agent_json()
        self.channel.send("done", status=self.status["status"])
        return code

    def _raised(self, exc: BaseException) -> None:
        """The script raised ``exc`` (any type): its traceback on stderr, and the status with the kind of failure."""
        text = user_traceback(exc, self.agent_dir, RUNPY)
        sys.stderr.write(text)
        self.status.update(status="raised", message=f"{type(exc).__name__}: {exc}", traceback=text, exit_code=1,
                           failure=failure_kind(exc))


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()
