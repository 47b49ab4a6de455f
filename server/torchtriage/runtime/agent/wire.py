"""agent.json's records and the agent's exit codes: the one definition both ends use (stdlib only,
Python 3.8 syntax; ``bootstrap.py`` reads the exit codes before it imports torch).

The agent writes each record as a JSON array (a ``NamedTuple`` serialises as
one: compact, and field order is fixed here); the host reads an array back
into the same ``NamedTuple`` with ``read_records``, so every field is used by
name on both sides.  Add fields only at the end and bump ``WIRE_VERSION``;
``read_records`` accepts rows with fewer fields from older agents when the new
fields have defaults.

``chains`` (lists of site indexes, outermost first) is the one variable-length
record and stays a plain list of ints.  ``strings`` is a table of the file and
function names of the frame samples (``Sample`` holds indexes into it).
Version 2: samples name their file and function through ``strings``.
Version 3: ``compiles`` and ``graph_breaks`` (torch.compile, from ``dynamo_watch``),
``Step.compile_ns``, and ``dtype_events`` (ops mixing float dtypes and casts between
them, from ``dtypes``).
``collectives`` (``Collective`` records) is a key added without a version bump:
an older agent's file lacks it, which reads as "no collectives seen".
Version 4: ``shapes``, ``held``, ``optimizers``, ``gaps`` and ``device_facts`` (Tensor-Core
shapes, where peak memory goes, GPU idle gaps, the math settings).
"""

from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Type, TypeVar

WIRE_VERSION = 4

# How ``bootstrap.py`` ends when the agent never ran the script (agent.json then says why too):
EXIT_NO_TORCH = 97  # the interpreter cannot import torch ("no_torch")
EXIT_AGENT_ERROR = 98  # the agent's session could not start ("raised")


class Step(NamedTuple):
    """One recorded ``ProfilerStep#N`` on the main thread; ``compile_ns``: torch.compile compiling inside it."""

    index: int
    start_ns: int
    end_ns: int
    compile_ns: int = 0


class Site(NamedTuple):
    """A user source site: an exact call ``line``, or a user function (``scope``) whose line the samples resolve."""

    kind: str  # "line" | "scope"
    path: str
    line: int
    function: str


class Charge(NamedTuple):
    """Self time of one (step, chain, category, name) summed over its events."""

    step: int  # position in ``steps``
    chain: int  # index into ``chains``
    category: str
    name: str  # op, kernel-runtime call or Python function
    root: int  # pending root (index into ``roots``) the time belongs to, -1 when the line is known
    main: bool  # charged on the main (stepping) thread
    ns: int
    count: int


class Root(NamedTuple):
    """An interval whose work is charged to a ``scope`` site: samples inside it name the line."""

    start_ns: int
    end_ns: int


class Alloc(NamedTuple):
    """One allocator event (``size`` < 0: a free)."""

    step: int
    chain: int
    root: int
    time_ns: int
    size: int
    total_allocated: int
    ptr: int
    device: str  # "cpu" | "cuda" | ...


class AllocStep(NamedTuple):
    """The allocator's total in one step before the last (``alloc_summary``): its peak and where it ended."""

    device: str
    step: int
    peak_bytes: int
    end_bytes: int


class AllocSite(NamedTuple):
    """Bytes allocated by one (chain, root) before the last step (``alloc_summary``)."""

    device: str
    chain: int
    root: int
    bytes: int


class Sync(NamedTuple):
    """One host-device synchronisation (``.item()``, ``cudaStreamSynchronize``...)."""

    step: int
    chain: int
    root: int
    kind: str  # "item" | "nonzero" | "stream_sync" | "device_sync" | "event_sync"
    op: str
    ns: int


class GpuActivity(NamedTuple):
    """One GPU kernel or memcpy, owned by the chain that launched it."""

    step: int
    chain: int
    root: int
    name: str
    start_ns: int
    ns: int


class Sample(NamedTuple):
    """One frame sample of user code (main thread, or a DataLoader worker)."""

    time_ns: int
    path: int  # index into ``strings``
    function: int  # index into ``strings``
    line: int


class OpStat(NamedTuple):
    """One operator name's calls and time over the recorded steps, for the operator table.

    ``device`` "cpu": a host op or runtime call (``aten::mm``, ``cudaLaunchKernel``);
    "cuda": a GPU kernel or memcpy (self = total = its device time).  ``main``: on the
    main (stepping) thread (GPU rows: always true).  ``total_ns`` counts a call nested
    inside another of the same name once.  ``chain``/``root`` name the caller with the
    most of its time.
    """

    name: str
    device: str
    main: bool
    calls: int
    self_ns: int
    total_ns: int
    chain: int
    root: int


class Compile(NamedTuple):
    """One torch.compile compile of one frame, as dynamo's callbacks and compilation metrics tell it.

    ``compile_id`` is dynamo's "frame/attempt" ("0/1": frame 0's second compile, a recompile);
    ``function``/``path``/``line`` the code object compiled (torch's own wrapper for a compiled
    module); ``call_path``/``call_line`` the innermost user frame when the compile started (the
    line that called the compiled code); times on the profiler's clock.  ``recompile_reason`` is
    the guard that failed, ``fail_reason`` why nothing was compiled (the recompile limit...)."""

    compile_id: str
    trigger: str  # "dynamo" | "lazy_backward" | ...
    function: str
    path: str
    line: int
    call_path: str
    call_line: int
    start_ns: int
    end_ns: int
    recompile_reason: str
    fail_reason: str


class GraphBreak(NamedTuple):
    """One graph break dynamo logged: the user line, the break's type and dynamo's reason text."""

    compile_id: str  # the compile it happened in ("" unknown)
    path: str
    line: int
    kind: str  # dynamo's graph-break type, e.g. "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    reason: str  # dynamo's whole reason: explanation and hints


class DtypeEvent(NamedTuple):
    """Ops that mix float dtypes, or casts between float dtypes, at one user site (summed).

    ``kind`` "mixed": a top-level op whose floating inputs mix a 16-bit float with float32/64
    (``dtypes`` like "bfloat16[32, 64] float32[64]"); ``origin_*`` say where the wider operand was
    made: an allocation inside the recorded steps (its chain and root) or a module's
    register_buffer / parameter (its path and line).  ``kind`` "cast": copies from one float dtype
    to another ("bfloat16->float32"), inside the top-level ``op`` (``aten::to`` when the user
    cast, ``aten::mul`` when a promotion did), with the bytes read and written and their time."""

    step: int
    chain: int
    root: int
    kind: str  # "mixed" | "cast"
    op: str
    dtypes: str
    count: int
    bytes: int
    ns: int
    origin_chain: int  # -1: unknown
    origin_root: int
    origin_path: str  # "": unknown
    origin_line: int
    origin_name: str  # the buffer's or parameter's name when a module registered it, else ""


class Collective(NamedTuple):
    """One collective range on a thread other than the stepping one (gloo's workers), e.g. ``gloo:all_reduce``."""

    step: int  # position in ``steps`` of the step it starts in, -1 outside them
    name: str
    start_ns: int
    end_ns: int


class ShapeStat(NamedTuple):
    """One matmul or convolution signature over the recorded steps: the op, its dtype and the
    sizes of the two operands that define the math (``7x30,30x50``; for a convolution the input
    and the weight), with calls, host time, and the device time of the kernels it launched.
    ``chain``/``root`` name the caller with the longest call, as in ``OpStat``."""

    name: str
    dtype: str
    dims: str
    calls: int
    cpu_ns: int
    gpu_ns: int
    chain: int
    root: int


class Held(NamedTuple):
    """One storage the training state holds when the window ends: ``kind`` "parameter",
    "gradient" or "optimizer_state"; ``ptr`` is the allocation's address (matches ``Alloc.ptr``)."""

    kind: str
    device: str
    ptr: int
    nbytes: int


class OptimizerInfo(NamedTuple):
    """One optimizer that stepped: its class, the parameters it updates (elements), the bytes of
    its state, and the implementation it was asked for ("fused" | "foreach" | "for-loop" | "default")."""

    name: str
    params: int
    state_bytes: int
    implementation: str


class Gap(NamedTuple):
    """One of the largest GPU idle gaps: when, how long, and what the main thread was doing in it
    (the innermost user line; ``exact`` False when only the function is known, ``cpu`` the innermost
    event, ``probes`` of ``PROBES`` points in the gap that landed there) and the kernel after it."""

    step: int
    start_ns: int
    ns: int
    path: str
    line: int
    function: str
    exact: bool
    cpu: str
    probes: int
    next_kernel: str


class DeviceFacts(NamedTuple):
    """Math settings and allocator figures read when the window ends (``capability`` -1 on CPU;
    byte figures 0 where the device has no caching allocator)."""

    float32_matmul_precision: str
    allow_tf32: bool
    cudnn_allow_tf32: bool
    capability_major: int
    capability_minor: int
    reserved_peak_bytes: int
    allocated_peak_bytes: int
    inactive_split_peak_bytes: int
    total_bytes: int
    alloc_conf: str


Record = TypeVar("Record", Step, Site, Charge, Root, Alloc, AllocStep, AllocSite, Sync, GpuActivity, Sample, OpStat, Collective, Compile, GraphBreak,
                 DtypeEvent, ShapeStat, Held, OptimizerInfo, Gap, DeviceFacts)

# agent.json key -> record type
RECORDS: Dict[str, Type[Any]] = {
    "steps": Step,
    "sites": Site,
    "charges": Charge,
    "sampled_charges": Charge,  # a window without Python frames: line time from the frame samples (agent/sampled_lines.py)
    "roots": Root,
    "allocs": Alloc,
    "alloc_steps": AllocStep,  # with "allocs_cut_ns": the allocations before the last step, summed (agent/alloc_summary.py)
    "alloc_sites": AllocSite,
    "syncs": Sync,
    "gpu": GpuActivity,
    "samples": Sample,
    "worker_samples": Sample,
    "ops": OpStat,
    "collectives": Collective,
    "compiles": Compile,
    "graph_breaks": GraphBreak,
    "dtype_events": DtypeEvent,
    "shapes": ShapeStat,
    "held": Held,
    "optimizers": OptimizerInfo,
    "gaps": Gap,
    "device_facts": DeviceFacts,
}


def is_gpu_annotation(name: str) -> bool:
    """A ``record_function`` range that torch mirrors on the GPU's timeline (``ProfilerStep#N``,
    ``Optimizer.step#SGD.step``): a label spanning kernels, not GPU work."""
    return name.startswith("ProfilerStep#") or (name.startswith("Optimizer.") and "#" in name)


def read_records(rows: Iterable[Iterable[Any]], record: Type[Record]) -> List[Record]:
    """Rows read from agent.json as ``record`` tuples; a row of the wrong length raises ValueError."""
    out = []
    for row in rows:
        values = list(row)
        try:
            out.append(record(*values))
        except TypeError:
            raise ValueError(f"agent.json: a {record.__name__} record needs the fields {record._fields}, got {values!r}") from None
    return out


def encode_samples(samples: Iterable[Any], absolute: Callable[[str], str], strings: Dict[str, int]) -> List[Sample]:
    """Raw ``(time_ns, filename, function, line)`` samples as ``Sample`` records whose file (made
    absolute) and function are indexes into ``strings``, which grows as new names appear; the agent
    writes ``list(strings)`` as agent.json's ``strings``."""
    out = []
    for time_ns, filename, function, line in samples:
        path = strings.setdefault(absolute(filename), len(strings))
        name = strings.setdefault(function, len(strings))
        out.append(Sample(time_ns, path, name, line))
    return out

