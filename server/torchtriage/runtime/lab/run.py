"""Run the script once per configuration (and repeat), each in its own child process.

fp32 runs first: the device its model trained on decides which other
configurations make sense (a CPU skips fp16 and reduce-overhead unless told
otherwise); a script that cannot run at all (syntax error, no torch) or never
steps is not run again, and the no-step watchdog is left out of compiled runs
(compiling may take minutes before the first step).  After an interrupt
(Ctrl-C, SIGTERM, a cancelled editor request) nothing more runs.  Repeats are interleaved (fp32, bf16, compile, fp32, ...) so slow
moments of a shared machine spread over every configuration.  Each run gets a
folder of its own (``<name>`` or ``<name>-r2`` ...) with its output.log and
agent.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..agent.lab.wire import LabResult, read_lab_result
from ..results.profile_data import CANNOT_RUN_STATUSES, RunStatus
from ..profiling.finish import run_status
from ..profiling.runner import RunOptions, run_agent
from .plan import Configuration, LabSettings, cpu_skip_reason

EventCallback = Callable[[dict[str, Any]], None]
OutputCallback = Callable[[str], None]
StartCallback = Callable[[Configuration, int, int, int], None]  # configuration, repeat, run index, runs planned


@dataclass
class LabRunOptions(RunOptions):
    """RunOptions whose agent settings carry the lab's configuration (the agent then measures instead of profiling)."""

    lab: dict[str, Any] = field(default_factory=dict)

    def agent_config(self, progress_fd: int) -> dict[str, Any]:
        return dict(super().agent_config(progress_fd), lab=self.lab)


@dataclass
class ConfigRun:
    """One run of one configuration: how it ended and what the agent measured."""

    configuration: Configuration
    repeat: int  # 1-based
    run_dir: Path
    status: RunStatus
    failure: str  # "" when the script ran as planned; else the agent's or the runner's reason
    result: Optional[LabResult]
    meta: dict[str, Any]


@dataclass
class LabRuns:
    """Every run, and the configurations not run with the reason."""

    runs: list[ConfigRun]
    skipped: dict[str, tuple[str, str]]  # configuration name -> (reason, message): why it was not run (again)
    device: Optional[str]


def run_folder_name(configuration: Configuration, repeat: int) -> str:
    name = configuration.name.replace("+", "-")
    return name if repeat == 1 else f"{name}-r{repeat}"


def run_configuration(
    configuration: Configuration, repeat: int, settings: LabSettings, script: Path, args: list[str], python: str, lab_dir: Path,
    on_event: Optional[EventCallback] = None, on_output: Optional[OutputCallback] = None,
) -> ConfigRun:
    """Run the script under the lab agent for one configuration; never raises for the script's faults."""
    run_dir = lab_dir / run_folder_name(configuration, repeat)
    options = LabRunOptions(
        script=script, args=list(args), out_dir=run_dir, python=python, run_name=run_dir.name,
        # compiling a large model may take longer than the watchdog before its first step; the eager fp32 run
        # has already shown whether the script steps at all
        timeout_s=settings.timeout_s, no_step_timeout_s=None if configuration.compile_mode else settings.no_step_timeout_s,
        lab={
            "precision": configuration.precision, "compile_mode": configuration.compile_mode,
            "warmup": settings.warmup, "steps": settings.steps, "seed": settings.seed,
        },
    )
    outcome = run_agent(options, on_event=on_event, on_output=on_output)
    status = run_status(outcome)
    agent = outcome.agent or {}
    lab = agent.get("lab")
    result = read_lab_result(lab) if isinstance(lab, dict) else None
    failure = ""
    if outcome.reason:  # the runner stopped it: timeout, no steps, interrupted
        failure = outcome.reason
    elif status.status not in ("completed", "stopped_after_window"):
        failure = str((agent.get("status") or {}).get("failure") or status.status)
    return ConfigRun(configuration, repeat, run_dir, status, failure, result, dict(agent.get("meta") or {}))


def run_lab(
    configurations: list[Configuration], settings: LabSettings, script: Path, args: list[str], python: str, lab_dir: Path,
    on_start: Optional[StartCallback] = None, on_event: Optional[EventCallback] = None, on_output: Optional[OutputCallback] = None,
) -> LabRuns:
    """Every configuration ``settings.repeat`` times, the baseline first; see the module docstring."""
    planned = len(configurations) * settings.repeat
    runs: list[ConfigRun] = []
    skipped: dict[str, tuple[str, str]] = {}

    def run(configuration: Configuration, repeat: int) -> ConfigRun:
        if on_start is not None:
            on_start(configuration, repeat, len(runs) + 1, planned - len(skipped) * settings.repeat)
        done = run_configuration(configuration, repeat, settings, script, args, python, lab_dir, on_event, on_output)
        runs.append(done)
        return done

    baseline = run(configurations[0], 1)
    device = baseline.result.device if baseline.result is not None and baseline.result.models else baseline.meta.get("device")
    if baseline.status.status in CANNOT_RUN_STATUSES:
        why = f"not run: the script cannot run ({baseline.status.status}: {baseline.status.message})"
        return LabRuns(runs, {c.name: ("cannot_run", why) for c in configurations[1:]}, device)
    if device == "cpu" and not settings.run_skipped:
        for configuration in configurations[1:]:
            reason = cpu_skip_reason(configuration)
            if reason:
                skipped[configuration.name] = ("skipped_on_cpu", f"skipped on CPU: {reason}")
    if baseline.failure == "no_steps":
        why = f"not run: the {configurations[0].name} run saw no training step ({baseline.status.message})"
        return LabRuns(runs, {c.name: ("no_steps", why) for c in configurations[1:]}, device)
    interrupted = baseline.failure == "interrupted"
    for repeat in range(1, settings.repeat + 1):
        for configuration in configurations:
            if (repeat == 1 and configuration == configurations[0]) or configuration.name in skipped:
                continue
            if interrupted:  # Ctrl-C or a cancelled editor request: nothing more runs
                skipped.setdefault(configuration.name, ("interrupted", "not run: the lab was interrupted"))
                continue
            interrupted = run(configuration, repeat).failure == "interrupted"
    return LabRuns(runs, skipped, device)
