"""A real ipykernel driven through jupyter_client: run cells, collect their outputs."""

from __future__ import annotations

import os
import queue
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

SERVER = str(Path(__file__).resolve().parents[2] / "server")


@dataclass
class Executed:
    reply: dict[str, Any]
    outputs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def stdout(self) -> str:
        return "".join(o["content"]["text"] for o in self.outputs if o["msg_type"] == "stream" and o["content"]["name"] == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(o["content"]["text"] for o in self.outputs if o["msg_type"] == "stream" and o["content"]["name"] == "stderr")

    def bundles(self) -> list[dict[str, Any]]:
        return [o["content"]["data"] for o in self.outputs if o["msg_type"] in ("display_data", "execute_result")]

    def bundle(self, mime: str) -> dict[str, Any]:
        found = [b for b in self.bundles() if mime in b]
        assert found, f"no {mime} output; stdout={self.stdout!r} stderr={self.stderr!r} outputs={self.outputs!r}"
        return found[-1]


class Kernel:
    def __init__(self, cwd: Path, watch_fds: bool = False) -> None:
        """``watch_fds``: ipykernel shows what is written to fds 1 and 2 in the cell, as in a notebook
        (it does not under pytest, which it recognises by PYTEST_CURRENT_TEST)."""
        env = dict(os.environ)
        if watch_fds:
            env.pop("PYTEST_CURRENT_TEST", None)
        env["PYTHONPATH"] = SERVER + os.pathsep + env.get("PYTHONPATH", "")
        env["OMP_NUM_THREADS"] = "1"
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(cwd), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 120.0, interrupt_after: float | None = None) -> Executed:
        msg_id = self.client.execute(code)
        outputs: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        interrupt_at = time.monotonic() + interrupt_after if interrupt_after else None
        while True:
            if interrupt_at and time.monotonic() >= interrupt_at:
                self.manager.interrupt_kernel()
                interrupt_at = None
            try:
                msg = self.client.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                assert time.monotonic() < deadline, f"timed out running {code[:60]!r}"
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
            if kind in ("stream", "display_data", "execute_result", "error"):
                outputs.append({"msg_type": kind, "content": msg["content"]})
        return Executed(self._reply_to(msg_id), outputs)

    def _reply_to(self, msg_id: str) -> dict[str, Any]:
        """The shell reply to ``msg_id``: replies to earlier requests (``wait_for_ready`` sends several
        kernel_info requests) may still be queued, and taking them would shift every later reply by one."""
        deadline = time.monotonic() + 30
        while True:
            reply = self.client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]

    def alive(self) -> bool:
        return self.manager.is_alive() and self.run("1 + 1").reply["status"] == "ok"

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
