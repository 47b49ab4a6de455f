"""The rank this agent runs in (torchrun's environment) and the DDP models it sees at runtime.

Standard library and torch only.  ``rank_identity`` reads the variables torchrun
sets for every worker.  ``DdpWatch`` wraps ``DistributedDataParallel``'s
constructor (a class attribute, restored by ``uninstall``) to record the
arguments each DDP model was built with, and puts a forward pre-hook on each
model to count, per training step, how many forwards ran and how many of them
inside ``no_sync()`` (a hook, not a wrapper: the event-tree walk treats code
of this folder as profiler overhead, so nothing of the model may run inside it);
at the end it adds DDP's own logging data (bucket sizes, unused parameters,
sampled compute/communication times).  Nothing here changes what the script does.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Dict, List, Optional

ENV_FIELDS = (
    ("rank", "RANK"), ("local_rank", "LOCAL_RANK"), ("world_size", "WORLD_SIZE"),
    ("local_world_size", "LOCAL_WORLD_SIZE"), ("node_rank", "GROUP_RANK"), ("restart_count", "TORCHELASTIC_RESTART_COUNT"),
)
DDP_ARGUMENTS = ("bucket_cap_mb", "find_unused_parameters", "static_graph", "gradient_as_bucket_view", "broadcast_buffers", "device_ids")
MAX_STEPS_KEPT = 64  # per-step forward counts kept (the last ones)
LOGGING_INTS = (
    "bucket_cap_bytes", "total_parameter_size_bytes", "num_parameter_tensors", "unused_parameter_size", "has_rebuilt_buckets",
    "iteration", "avg_forward_compute_time", "avg_backward_compute_time", "avg_backward_comm_time",
    "avg_backward_compute_comm_overlap_time", "gloo_num_threads",
)
LOGGING_STRS = ("backend_name", "bucket_sizes", "module_name", "dtypes")


def rank_identity(environ: Optional[Dict[str, str]] = None) -> Optional[Dict[str, Any]]:
    """Rank, local rank, world size, node rank, host and pid from torchrun's variables; None outside torchrun."""
    env = os.environ if environ is None else environ
    if "RANK" not in env:
        return None
    identity: Dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid()}
    for key, name in ENV_FIELDS:
        try:
            identity[key] = int(env[name])
        except (KeyError, ValueError):
            identity[key] = None
    identity["master"] = f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}"
    return identity


def tensorboard_name(identity: Dict[str, Any]) -> str:
    """The trace's file name in the shared ``tb/<run>/`` folder: torch-tb-profiler reads
    ``<node>_<process>`` as the worker's name and, with no number before ``.pt.trace``,
    puts every rank in one span (its Distributed view compares the workers of a span)."""
    host = str(identity.get("host") or "host").replace("_", "-")
    return f"{host}_{identity.get('rank')}.pt.trace.json.gz"


class DdpWatch:
    """Records each DDP model's construction arguments and the forwards of each step."""

    def __init__(self) -> None:
        self.models: List[Dict[str, Any]] = []
        self.steps: List[Dict[str, int]] = []  # per finished step: forwards, forwards under no_sync
        self._forwards = 0
        self._unsynced = 0
        self._instances: List[Any] = []
        self._saved: Dict[str, Any] = {}

    def install(self) -> None:
        try:
            from torch.nn.parallel import DistributedDataParallel as DDP
        except ImportError:
            return
        watch = self
        init = DDP.__init__

        def __init__(ddp: Any, *args: Any, **kwargs: Any) -> None:
            init(ddp, *args, **kwargs)
            watch._constructed(ddp, kwargs)

        self._saved = {"__init__": init}
        DDP.__init__ = __init__  # type: ignore[method-assign]

    def _forward_pre(self, ddp: Any, args: Any) -> None:
        self._forwards += 1
        if not getattr(ddp, "require_backward_grad_sync", True):
            self._unsynced += 1

    def uninstall(self) -> None:
        if not self._saved:
            return
        from torch.nn.parallel import DistributedDataParallel as DDP

        for name, original in self._saved.items():
            setattr(DDP, name, original)
        self._saved = {}

    def _constructed(self, ddp: Any, kwargs: Dict[str, Any]) -> None:
        try:
            record: Dict[str, Any] = {name: _plain(kwargs[name]) for name in DDP_ARGUMENTS if name in kwargs}
            record["find_unused_parameters"] = bool(getattr(ddp, "find_unused_parameters", False))
            record["static_graph"] = bool(getattr(ddp, "static_graph", False))
            record["gradient_as_bucket_view"] = bool(getattr(ddp, "gradient_as_bucket_view", False))
            record["module"] = type(getattr(ddp, "module", ddp)).__name__
            record["parameters"] = sum(p.numel() for p in ddp.parameters() if p.requires_grad)
            record["parameter_bytes"] = sum(p.numel() * p.element_size() for p in ddp.parameters() if p.requires_grad)
            ddp.register_forward_pre_hook(self._forward_pre)
            self.models.append(record)
            self._instances.append(ddp)
        except Exception as exc:  # never break the user's model over a record
            self.models.append({"error": f"{type(exc).__name__}: {exc}"})

    def mark_step(self) -> None:
        """A training step ended: keep its forward counts."""
        if not self._instances:
            return
        self.steps.append({"forwards": self._forwards, "no_sync_forwards": self._unsynced})
        del self.steps[:-MAX_STEPS_KEPT]
        self._forwards = self._unsynced = 0

    def record(self) -> Dict[str, Any]:
        """What agent.json's ``meta.ddp`` holds: models (arguments + DDP's logging data) and per-step forwards."""
        models = []
        for record, ddp in zip(self.models, self._instances + [None] * len(self.models)):
            models.append(dict(record, logging=_logging_data(ddp)) if ddp is not None else record)
        return {"models": models, "steps": list(self.steps)}


def _logging_data(ddp: Any) -> Dict[str, Any]:
    """DDP's own logging data (``_get_ddp_logging_data``), the fields we read; {} when unavailable."""
    try:
        data = ddp._get_ddp_logging_data()
    except Exception:
        return {}
    out: Dict[str, Any] = {}
    for key in LOGGING_INTS:
        value = data.get(key)
        if isinstance(value, int):
            out[key] = value
    for key in LOGGING_STRS:
        value = data.get(key)
        if isinstance(value, str):
            out[key] = value
    return out


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)
