"""What one lab run writes into agent.json's ``lab`` key: the one definition both ends use.

The agent writes ``LabResult._asdict()`` (a JSON object, so the file reads on
its own); the host reads it back with ``read_lab_result``, field by field.
Add fields only at the end, with a default, and bump ``LAB_WIRE_VERSION``.
Standard library only (Python 3.8 syntax): the agent imports it.
"""

from typing import Any, Dict, List, NamedTuple, Optional

LAB_WIRE_VERSION = 1


class LabResult(NamedTuple):
    """The measurements of one configuration's run, as the agent saw them."""

    precision: str = "fp32"  # "fp32" | "bf16" | "fp16"
    compile_mode: Optional[str] = None  # None: eager; "default" | "reduce-overhead" | "max-autotune"
    device: str = "cpu"  # the device type of the trained model's parameters
    device_name: str = ""
    step_detection: Optional[str] = None  # the StepDetector's mode
    steps_seen: int = 0  # iterations counted (the first only starts the clock)
    warmup: int = 0
    steps: int = 0  # measured steps asked for
    step_times_s: List[float] = []  # measured steps, compile time inside them taken out
    compile_s: float = 0.0  # every compilation of the run (dynamo, lazy backward, CUDA-graph recording)
    compile_in_window_s: float = 0.0  # the part of it inside the measured steps
    compiles: int = 0
    recompiles: int = 0
    graph_breaks: int = 0
    graphs: int = 0  # graphs dynamo captured
    batch_sizes: List[int] = []  # per measured step: leading dim of the first tensor reaching the model (0: none seen)
    peak_memory_bytes: Optional[int] = None
    memory_measure: Optional[str] = None  # "cuda_max_allocated" | "cpu_peak_rss_growth"
    losses: List[Optional[float]] = []  # per measured step: the last scalar backward() was called on
    output_dtype: Optional[str] = None  # dtype of the trained model's output in the measured steps
    models: List[str] = []  # class names of the trained models the agent wrapped
    model_calls: int = 0  # calls of the trained models in the measured steps
    compiled_calls: int = 0  # of which through the compiled forward
    scaler_skipped_steps: int = 0  # fp16: optimizer steps the GradScaler skipped (inf/NaN gradients)
    script_autocast: bool = False  # the script enabled autocast itself around the model
    script_scaler: bool = False  # the script made its own GradScaler
    notes: List[str] = []


def read_lab_result(data: Dict[str, Any]) -> LabResult:
    """agent.json's ``lab`` object as a ``LabResult``; unknown keys are ignored, missing ones take defaults."""
    return LabResult(**{name: data[name] for name in LabResult._fields if name in data})
