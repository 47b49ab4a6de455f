"""The typed result of one profiled run, after attribution to source lines.

This is the seam inside the runtime bridge: ``attribution`` turns what the
agent recorded (event tree, samples, memory events) into a ``ProfileData``;
``diagnosis`` and ``report`` only read ``ProfileData``.  It is saved as
``profile.json`` in the run folder so a report can be rebuilt without re-running.

Times are microseconds summed over the *active* (recorded) steps unless a name
says ``per_step``.  Paths are absolute; ``line`` is 1-based.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .device_facts import DeviceFacts, GpuGap, MemoryShape, ShapeCost

# Where step time can go.  Shares in report.json use these names.
CATEGORIES = (
    "data_loading",  # waiting for the next batch (loader __next__, Dataset/collate work)
    "host_sync",  # .item()/.cpu()/synchronize stalls
    "python_overhead",  # CPU-side Python work between ops
    "launch_overhead",  # dispatch/launch cost of many short ops or kernels
    "compute",  # CPU ops or GPU kernels doing the math (forward + backward)
    "optimizer",  # optimizer.step / zero_grad
    "communication",  # collectives (NCCL/gloo)
    "idle",  # unaccounted time inside steps
)

RUN_STATUSES = ("completed", "stopped_after_window", "raised", "exited", "no_steps", "timeout", "killed", "interrupted", "syntax_error", "no_torch")
OK_STATUSES = ("completed", "stopped_after_window")  # the window was recorded and the run ended as planned
CANNOT_RUN_STATUSES = ("syntax_error", "no_torch")  # the script never started


@dataclass
class StepTiming:
    index: int
    start_us: float
    end_us: float
    compile_us: float = 0.0  # torch.compile compiling inside this step: not step time (left out of duration_us)
    device_backlog_us: float = 0.0  # the GPU still ran this step's kernels after the CPU ended it (attribution/device_time.py)

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us - self.compile_us + self.device_backlog_us


@dataclass
class LineCost:
    """Time charged to one user source line in one category."""

    path: str
    line: int
    category: str
    self_us: float  # time of work charged to this line itself
    inclusive_us: float = 0.0  # including callees in user code
    count: int = 0  # events charged
    top_names: list[str] = field(default_factory=list)  # dominant op/kernel/frame names
    function: str = ""  # enclosing function name, for display
    detail: str = ""  # e.g. "work happens in DataLoader workers: only the wait is visible"
    device: str = "cpu"  # "cpu": host time on the main thread's timeline; "cuda": GPU kernel time launched from this line


@dataclass
class SyncPoint:
    path: str
    line: int
    kind: str  # "item" | "cpu" | "tolist" | "nonzero" | "stream_sync" | "device_sync" | "event_sync"
    count: int  # over active steps
    stall_us: float  # total time blocked
    op: str = ""  # e.g. "aten::_local_scalar_dense"


@dataclass
class MemoryStep:
    step: int
    peak_bytes: int
    end_bytes: int  # allocated at the end of the step


@dataclass
class MemoryLine:
    path: str
    line: int
    allocated_bytes: int  # allocated during active steps
    retained_bytes: int  # allocated and not freed by the end of the window


@dataclass
class OpCost:
    """One operator (aten op, runtime call or GPU kernel) over the active steps: calls and time."""

    name: str
    device: str = "cpu"  # "cpu": host op or runtime call; "cuda": GPU kernel or memcpy
    calls: int = 0
    self_us: float = 0.0  # its own time, without the ops it calls
    total_us: float = 0.0  # including the ops it calls (nested calls of the same name once)
    main_thread: bool = True  # on the main (stepping) thread; GPU rows: true
    path: str = ""  # the user line with most of its time ("" when none)
    line: int = 0
    function: str = ""


@dataclass
class CompileEvent:
    """One torch.compile compile of one frame (dynamo's "frame/attempt" id), on the steps' clock."""

    compile_id: str
    trigger: str  # "dynamo" | "lazy_backward" | ...
    function: str  # the code object compiled (a resume function after a graph break: torch_dynamo_resume_in_...)
    path: str
    line: int
    call_path: str  # the user line that called the compiled code ("" unknown)
    call_line: int
    start_us: float  # from the first recorded step's start (negative: before the window)
    duration_us: float
    recompile_reason: str = ""  # the guard that failed ("" for a first compile)
    fail_reason: str = ""  # why nothing was compiled (the recompile limit...)
    in_window_us: float = 0.0  # the part inside recorded steps


@dataclass
class GraphBreakSite:
    """One graph break dynamo logged: where, its type, dynamo's reason text, and the compile it split."""

    compile_id: str
    path: str
    line: int
    kind: str
    reason: str


@dataclass
class DtypeLine:
    """Dtype churn charged to one user line over the recorded steps (agent/dtypes.py says what is recorded)."""

    path: str
    line: int
    function: str
    kind: str  # "mixed": ops mixing 16-bit and 32/64-bit floats; "cast": copies between float dtypes
    op: str  # the top-level op ("aten::mul", "aten::to")
    dtypes: str  # "bfloat16[32, 64] float32[64]" (mixed) or "float32->bfloat16" (cast)
    count: int
    bytes: int  # cast: bytes read and written
    cast_us: float  # cast: time of the copies
    origin_path: str = ""  # mixed: where the wider operand was made, when found
    origin_line: int = 0


@dataclass
class RunStatus:
    status: str = "completed"  # one of RUN_STATUSES
    message: str = ""
    traceback: str = ""
    exit_code: int | None = None


@dataclass
class ProfileData:
    """Everything diagnosis and reports need about one run."""

    script: str
    argv: list[str]
    cwd: str
    device: str  # "cpu" | "cuda"
    device_name: str
    torch_version: str
    python: str
    step_detection: str  # "optimizer" | "dataloader" | "forward"
    steps: list[StepTiming] = field(default_factory=list)
    category_us: dict[str, float] = field(default_factory=dict)  # totals over active steps
    lines: list[LineCost] = field(default_factory=list)
    sync_points: list[SyncPoint] = field(default_factory=list)
    memory_steps: list[MemoryStep] = field(default_factory=list)
    memory_lines: list[MemoryLine] = field(default_factory=list)
    ops_per_step: float = 0.0
    kernels_per_step: float = 0.0
    loader_workers: int | None = None  # num_workers of the loader seen, when known
    status: RunStatus = field(default_factory=RunStatus)
    warnings: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    ops: list[OpCost] = field(default_factory=list)  # per operator name, largest self time first
    # Per recorded step (same order as ``steps``): category -> main-thread time in that
    # step, ``idle`` the rest of the step; empty for profiles written before it existed.
    step_category_us: list[dict[str, float]] = field(default_factory=list)
    # Op events (nested ones included) per category over the recorded steps: tells the
    # model's ops from the Dataset's when the loader runs in the training process.
    ops_by_category: dict[str, int] = field(default_factory=dict)
    compiles: list[CompileEvent] = field(default_factory=list)  # torch.compile's compiles in the whole run
    graph_breaks: list[GraphBreakSite] = field(default_factory=list)
    dtype_lines: list[DtypeLine] = field(default_factory=list)
    # The device's work (device_model.py): matmul / convolution shapes by line, the math settings,
    # where the peak's memory goes, the largest GPU idle gaps.  Empty in profiles written before them.
    shapes: list[ShapeCost] = field(default_factory=list)
    device_facts: DeviceFacts | None = None
    memory_shape: MemoryShape | None = None
    gpu_gaps: list[GpuGap] = field(default_factory=list)
    # How the recorded window was sized (agent/window.py): {adaptive, recorded, ended_by, half_width,
    # target_half_width, python_frames}; None in profiles written before it.
    window: dict[str, Any] | None = None
    # The folders whose code counted as the user's (runtime/profiling/user_roots.py, agent/usercode.py);
    # empty in profiles written before them.
    user_roots: list[str] = field(default_factory=list)

    @property
    def steps_profiled(self) -> int:
        return len(self.steps)

    @property
    def mean_step_us(self) -> float:
        return sum(s.duration_us for s in self.steps) / len(self.steps) if self.steps else 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1), encoding="utf-8")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ProfileData":
        data = dict(data)
        data["steps"] = [StepTiming(**s) for s in data.get("steps", [])]
        data["lines"] = [LineCost(**x) for x in data.get("lines", [])]
        data["sync_points"] = [SyncPoint(**x) for x in data.get("sync_points", [])]
        data["memory_steps"] = [MemoryStep(**x) for x in data.get("memory_steps", [])]
        data["memory_lines"] = [MemoryLine(**x) for x in data.get("memory_lines", [])]
        data["status"] = RunStatus(**data.get("status", {}))
        data["ops"] = [OpCost(**x) for x in data.get("ops", [])]
        data["compiles"] = [CompileEvent(**x) for x in data.get("compiles", [])]
        data["graph_breaks"] = [GraphBreakSite(**x) for x in data.get("graph_breaks", [])]
        data["dtype_lines"] = [DtypeLine(**x) for x in data.get("dtype_lines", [])]
        data["shapes"] = [ShapeCost(**x) for x in data.get("shapes", [])]
        data["device_facts"] = DeviceFacts.from_json(data["device_facts"]) if data.get("device_facts") else None
        data["memory_shape"] = MemoryShape.from_json(data["memory_shape"]) if data.get("memory_shape") else None
        data["gpu_gaps"] = [GpuGap(**x) for x in data.get("gpu_gaps", [])]
        return cls(**data)

    @classmethod
    def load(cls, path: Path) -> "ProfileData":
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))
