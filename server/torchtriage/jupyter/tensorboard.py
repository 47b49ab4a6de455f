"""TensorBoard processes the server started, one per logdir, stopped with the server."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

START_S = 60.0


class TensorBoards:
    def __init__(self) -> None:
        self.running: dict[Path, tuple[subprocess.Popen[bytes], str]] = {}

    async def start(self, logdir: Path) -> tuple[str, int]:
        known = self.running.get(logdir)
        if known and known[0].poll() is None:
            return known[1], known[0].pid
        port = _free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"tensorboard exited with code {process.returncode} (is tensorboard installed?)")
            if _listening(port):
                self.running[logdir] = (process, url)
                return url, process.pid
            await asyncio.sleep(0.25)
        process.kill()
        raise RuntimeError(f"tensorboard did not start within {START_S:.0f} s")

    def stop_all(self) -> None:
        for process, _url in self.running.values():
            if process.poll() is None:
                process.terminate()
        self.running.clear()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0
