"""What the lab runs: the configurations (``--modes``), the settings, and what a CPU skips.

A configuration is a precision, optionally followed by a compile mode, joined
by ``+``: ``fp32``, ``bf16``, ``fp16`` (autocast float16 with a GradScaler),
``bf16+compile``, ``bf16+reduce-overhead``, ``bf16+max-autotune``,
``fp32+compile`` ...  ``compile``, ``reduce-overhead`` and ``max-autotune`` alone
mean bf16 with that compile mode.  fp32 always runs, first: it is the baseline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

PRECISIONS = ("fp32", "bf16", "fp16")
COMPILE_MODES = {"compile": "default", "reduce-overhead": "reduce-overhead", "max-autotune": "max-autotune"}
DEFAULT_MODES = "fp32,bf16,bf16+compile"
BASELINE = "fp32"


@dataclass(frozen=True)
class Configuration:
    """One way to run the script: a precision and an optional ``torch.compile`` mode."""

    precision: str
    compile_mode: Optional[str] = None  # None | "default" | "reduce-overhead" | "max-autotune"

    @property
    def name(self) -> str:
        if self.compile_mode is None:
            return self.precision
        suffix = next(key for key, value in COMPILE_MODES.items() if value == self.compile_mode)
        return f"{self.precision}+{suffix}"

    @property
    def grad_scaler(self) -> bool:
        return self.precision == "fp16"

    def describe(self) -> str:
        """A phrase for tables and progress: ``bf16 autocast + torch.compile``."""
        text = {"fp32": "fp32 (as written)", "bf16": "bf16 autocast", "fp16": "fp16 autocast + GradScaler"}[self.precision]
        if self.compile_mode == "default":
            text += " + torch.compile"
        elif self.compile_mode is not None:
            text += f" + torch.compile(mode={self.compile_mode!r})"
        return text


@dataclass(frozen=True)
class LabSettings:
    """How each configuration is run and judged."""

    steps: int = 30  # measured steps per run
    warmup: int = 5  # detected steps before the clock starts (compilation happens here)
    seed: int = 0
    repeat: int = 1  # runs per configuration (interleaved)
    timeout_s: Optional[float] = None  # per run
    no_step_timeout_s: Optional[float] = 300.0
    loss_tolerance: float = 0.05  # relative difference from fp32's final loss still called "ok"
    run_skipped: bool = False  # run the modes a CPU skips anyway

    def validate(self) -> None:
        if self.steps < 2:
            raise ValueError("--steps must be at least 2 (the spread needs several steps)")
        if self.warmup < 1:
            raise ValueError("--warmup must be at least 1 (the clock starts at the end of a warm-up step)")
        if self.repeat < 1:
            raise ValueError("--repeat must be at least 1")
        if not 0 < self.loss_tolerance < 10:
            raise ValueError("--loss-tolerance is a relative difference, e.g. 0.05")


def parse_configuration(text: str) -> Configuration:
    """One ``--modes`` item; ValueError with the accepted forms when it is not one."""
    item = text.strip().lower()
    if item in COMPILE_MODES:
        item = f"bf16+{item}"
    precision, _, compile_part = item.partition("+")
    if precision not in PRECISIONS or (compile_part and compile_part not in COMPILE_MODES):
        raise ValueError(
            f"unknown mode {text!r}: use a precision ({', '.join(PRECISIONS)}) optionally followed by "
            f"+{'/+'.join(COMPILE_MODES)}, e.g. bf16+compile; compile, reduce-overhead and max-autotune alone mean bf16"
        )
    return Configuration(precision, COMPILE_MODES[compile_part] if compile_part else None)


def parse_modes(text: str) -> list[Configuration]:
    """The configurations of ``--modes`` (comma-separated), fp32 first, each once."""
    configurations = [Configuration(BASELINE)]
    for item in text.split(","):
        if item.strip():
            configuration = parse_configuration(item)
            if configuration not in configurations:
                configurations.append(configuration)
    return configurations


def cpu_skip_reason(configuration: Configuration) -> Optional[str]:
    """Why a configuration makes no sense on a CPU (None when it does)."""
    if configuration.precision == "fp16":
        return (
            "fp16 autocast with a GradScaler is a GPU recipe (fp16 Tensor Cores; loss scaling against fp16 gradient "
            "underflow); CPUs have no fast fp16 matmul, and bf16 is the CPU's low precision"
        )
    if configuration.compile_mode == "reduce-overhead":
        return (
            "reduce-overhead records CUDA graphs to remove kernel-launch overhead, which only a GPU has; "
            "on a CPU it compiles like the default mode"
        )
    return None
