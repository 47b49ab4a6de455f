"""A CUDA profile built in the tests: an event tree shaped like torch's, walked by the real agent code.

No GPU has been available to this project (README, "Not yet verified on a
GPU"), so the CUDA paths are exercised on a tree made of stand-in nodes with
the fields the agent reads: Python calls with caller and callsite, ops with
their input shapes, ``cudaLaunchKernel`` runtime calls and GPU kernels tied to
them by correlation id, ``ProfilerStep#N`` ranges.  ``agent_json`` runs the
agent's ``Collector`` and ``gap_frames`` over it and returns agent.json as the
host reads it.

Each step (``STEP_NS`` long) of ``train.py``::

    10  y = model(x)                    aten::addmm bf16 64x1000 @ 1000x30522, 2 ms kernel
    11  z = torch.matmul(a, b)          aten::mm fp32 64x512 @ 512x512, 1 ms kernel
    12  value = loss.item()             waits for the GPU (cudaStreamSynchronize)
    13  time.sleep(...)                 CPU only
    14  log_metrics(y)                  CPU only: its own Python (line 22 in the samples)
    15  y.add_(1)                       an elementwise kernel, 150 us

The GPU idles from the end of the fp32 kernel to the elementwise kernel: in
steps 0 and 2 the sleep is short and ``log_metrics`` long, in step 1 the
other way round.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from torchtriage.runtime.agent.collect import USER_SCOPE, Collector, EventType
from torchtriage.runtime.agent.gaps import gap_frames
from torchtriage.runtime.agent.usercode import UserCode
from torchtriage.runtime.agent.wire import WIRE_VERSION, DeviceFacts, Held, OptimizerInfo, encode_samples

US = 1000
STEP_NS = 8_500 * US
ORIGIN = 1_000_000_000
MAIN, GPU_TID = 1, 7
FUNCTION_SCOPE = torch._C._profiler.RecordScope.FUNCTION
TORCH_DIR = os.path.dirname(torch.__file__)
FUNCTIONAL = os.path.join(TORCH_DIR, "nn", "functional.py")
RUNPY = "/usr/lib/python3.11/runpy.py"
SLEEP_US = {0: 1_000, 1: 4_000, 2: 1_000}  # per step; log_metrics takes the rest of 5 ms
LOG_DEF, LOG_BODY = 20, 22


class Tree:
    """Builds stand-in nodes; correlation ids are handed out in order."""

    def __init__(self, script: str) -> None:
        self.script = script
        self.correlation = 0

    @staticmethod
    def _node(tag: Any, name: str, start: int, end: int, children: list[Any], tid: int = MAIN, **fields: Any) -> SimpleNamespace:
        return SimpleNamespace(tag=tag, name=name, start_time_ns=start, end_time_ns=end, duration_time_ns=end - start,
                               start_tid=tid, extra_fields=SimpleNamespace(**fields), children=children, correlation_id=fields.pop("correlation", 0))

    def frame(self, file: str, line: int, function: str) -> SimpleNamespace:
        return SimpleNamespace(file_name=file, line_number=line, function_name=function)

    def py_call(self, callsite: tuple[str, int, str], caller: tuple[str, int, str], start: int, end: int, *children: Any) -> SimpleNamespace:
        return self._node(EventType.PyCall, f"{callsite[0]}({callsite[1]}): {callsite[2]}", start, end, list(children),
                          callsite=self.frame(*callsite), caller=self.frame(*caller))

    def c_call(self, name: str, line: int, start: int, end: int, *children: Any) -> SimpleNamespace:
        return self._node(EventType.PyCCall, f"<built-in method {name}>", start, end, list(children), caller=self.frame(self.script, line, "<module>"))

    def op(self, name: str, start: int, end: int, *children: Any, inputs: list[Any] = (), scope: Any = FUNCTION_SCOPE) -> SimpleNamespace:
        return self._node(EventType.TorchOp, name, start, end, list(children), scope=scope, sequence_number=-1, inputs=list(inputs))

    def launch(self, kernel: str, cpu_start: int, gpu_start: int, gpu_ns: int) -> list[SimpleNamespace]:
        """A ``cudaLaunchKernel`` on the main thread and the kernel it queued on the GPU."""
        self.correlation += 1
        kernel_node = self._node(EventType.Kineto, kernel, gpu_start, gpu_start + gpu_ns, [], tid=GPU_TID, correlation=self.correlation)
        # As torch builds the tree (checked on an H100, torch 2.11): the kernel is a child of its launch.
        runtime = self._node(EventType.Kineto, "cudaLaunchKernel", cpu_start, cpu_start + 8 * US, [kernel_node], correlation=self.correlation)
        return [runtime]

    def sync(self, start: int, end: int) -> SimpleNamespace:
        return self._node(EventType.Kineto, "cudaStreamSynchronize", start, end, [], correlation=0)


def tensor(*sizes: int, dtype: torch.dtype = torch.float32) -> SimpleNamespace:
    return SimpleNamespace(sizes=list(sizes), dtype=dtype)


def step_nodes(t: Tree, k: int) -> list[SimpleNamespace]:
    s = ORIGIN + k * STEP_NS
    at = lambda us: s + us * US  # noqa: E731
    script = t.script
    sleep_end = 3_100 + SLEEP_US[k]
    linear = t.py_call((FUNCTIONAL, 1, "linear"), (script, 10, "<module>"), at(0), at(100),
                       t.op("aten::addmm", at(10), at(90), *t.launch("ampere_bf16_s16816gemm", at(20), at(40), 2_000 * US),
                            inputs=[tensor(30522, dtype=torch.bfloat16), tensor(64, 1000, dtype=torch.bfloat16), tensor(1000, 30522, dtype=torch.bfloat16)]))
    matmul = t.c_call("matmul of type object", 11, at(100), at(200),
                      t.op("aten::mm", at(110), at(190), *t.launch("ampere_sgemm_128x64_nn", at(120), at(2_050), 1_000 * US),
                           inputs=[tensor(64, 512), tensor(512, 512)]))
    item = t.c_call("item of Tensor object", 12, at(200), at(3_100),
                    t.op("aten::item", at(210), at(3_090), t.op("aten::_local_scalar_dense", at(220), at(3_080), t.sync(at(230), at(3_070)))))
    sleep = t.c_call("sleep", 13, at(3_100), at(sleep_end))
    log = t.py_call((script, LOG_DEF, "log_metrics"), (script, 14, "<module>"), at(sleep_end), at(8_100))
    add = t.c_call("add_ of Tensor object", 15, at(8_100), at(8_200),
                   t.op("aten::add_", at(8_110), at(8_190), *t.launch("vectorized_elementwise_kernel", at(8_120), at(8_150), 150 * US)))
    return [linear, matmul, item, sleep, log, add]


def agent_json(tmp: Path, steps: int = 3) -> dict[str, Any]:
    """agent.json for ``steps`` steps of the tree above, from the real agent code, as JSON read back."""
    script = str(tmp / "train.py")
    t = Tree(script)
    body = [node for k in range(steps) for node in step_nodes(t, k)]
    module = t.py_call((script, 1, "<module>"), (RUNPY, 86, "_run_code"), ORIGIN - 50 * US, ORIGIN + steps * STEP_NS + 50 * US, *body)
    marks = [t.op(f"ProfilerStep#{k + 5}", ORIGIN + k * STEP_NS, ORIGIN + (k + 1) * STEP_NS, scope=USER_SCOPE) for k in range(steps)]
    roots = [module, *marks]
    agent_dir = str(Path(__file__).resolve().parents[2] / "server" / "torchtriage" / "runtime" / "agent")
    user = UserCode([str(tmp)], [agent_dir, TORCH_DIR])
    collector = Collector(user, agent_dir)
    collector.collect(roots)
    raw: dict[str, Any] = collector.result()
    raw["gaps"] = gap_frames(roots, collector.gpu, collector.steps, collector.main_tid, user)
    samples = [(ORIGIN + k * STEP_NS + us * US, script, "log_metrics", LOG_BODY)
               for k in range(steps) for us in range(3_150 + SLEEP_US[k], 8_100, 500)]
    strings: dict[str, int] = {}
    raw["samples"] = encode_samples(samples, user.absolute, strings)
    raw["strings"] = list(strings)
    gib = 2**30
    raw["device_facts"] = [DeviceFacts("highest", False, True, 8, 0, 20 * gib, 12 * gib, 3 * gib, 80 * gib, "")]
    raw["held"] = [Held("parameter", "cuda", 0x7F0000000000, gib), Held("optimizer_state", "cuda", 0x7F0040000000, 2 * gib)]
    raw["optimizers"] = [OptimizerInfo("AdamW", 2**28, 2 * gib, "default")]
    raw["meta"] = {"script": script, "argv": [script], "cwd": str(tmp), "device": "cuda", "device_name": "NVIDIA A100-SXM4-80GB",
                   "torch_version": torch.__version__, "python": "3.11", "step_detection": "optimizer", "sample_interval_s": 0.0005}
    raw["wire_version"] = WIRE_VERSION
    raw["status"] = {"status": "completed", "message": "", "traceback": "", "exit_code": 0}
    raw["warnings"] = []
    return json.loads(json.dumps(raw))


SCRIPT_LINES = {
    10: "y = model(x)",
    11: "z = torch.matmul(a, b)",
    12: "value = loss.item()",
    13: "time.sleep(0.001)",
    14: "log_metrics(y)",
    15: "y.add_(1)",
    LOG_DEF: "def log_metrics(y):",
    LOG_BODY: "    history.append([float(v) for v in y[0]])",
}


def write_script(tmp: Path) -> Path:
    """train.py with the lines the tree names, so reports show their source."""
    lines = [f"# line {n}" for n in range(1, LOG_BODY + 2)]
    for number, text in SCRIPT_LINES.items():
        lines[number - 1] = text
    path = tmp / "train.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
