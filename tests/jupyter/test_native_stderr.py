"""NativeStderr: fd 2 through the profiler-noise filter while a cell runs (here on pytest's captured fd 2)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchtriage.jupyter.native_stderr import NativeStderr

pytestmark = pytest.mark.skipif(os.name == "nt", reason="fd 2 is left alone on Windows")

NOISE = b"USDT:2026-11-22 10:38:36 11139:11139 SyncActivityProfilerHandler.cpp:52] profiler_start\n"


def test_noise_goes_to_the_log_and_the_rest_through(tmp_path: Path, capfd) -> None:
    before = os.fstat(2).st_ino
    log = tmp_path / "output.log"
    with NativeStderr(log) as native:
        os.write(2, NOISE)
        os.write(2, b"a real warning\n")
        os.write(2, b"a prompt without newline")
        time.sleep(0.5)
        assert capfd.readouterr().err == "a real warning\na prompt without newline"  # forwarded while the block runs
    assert os.fstat(2).st_ino == before
    assert native.written and log.read_bytes() == NOISE + b"a real warning\na prompt without newline"
    os.write(2, NOISE)
    assert capfd.readouterr().err == NOISE.decode()  # outside the block nothing is filtered


def test_fd_2_comes_back_when_the_block_raises(tmp_path: Path) -> None:
    before = os.fstat(2).st_ino
    with pytest.raises(KeyboardInterrupt):
        with NativeStderr(tmp_path / "output.log") as native:
            raise KeyboardInterrupt
    assert os.fstat(2).st_ino == before and not native.written
    assert not (tmp_path / "output.log").exists()


def test_a_process_started_in_the_block_is_still_forwarded_after_it(tmp_path: Path, capfd) -> None:
    log = tmp_path / "output.log"
    code = f"import os, time; time.sleep(1.0); os.write(2, {NOISE!r}); os.write(2, b'late line\\n')"
    with NativeStderr(log):
        child = subprocess.Popen([sys.executable, "-c", code])  # inherits the pipe as its fd 2, like a loader worker
    assert child.wait(timeout=30) == 0
    time.sleep(0.3)
    assert capfd.readouterr().err == "late line\n"
    assert log.read_bytes() == NOISE + b"late line\n"
