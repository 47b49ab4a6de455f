"""Static findings checked by a helper process that loads the linter while the caller works.

Loading the linter (its rules and the project model) takes several times longer than checking a
run's few hot files, which are known only once the run's profile is built.  ``torchtriage analyze``
starts this helper before it reads the trace: the linter loads on another core while the trace is
swept, and only the check itself is left when the hot files are known.  The helper reads the files
as one JSON line on its stdin and writes their findings, pickled, on its stdout; it needs no
arguments and exits when its stdin closes.

Whatever goes wrong with the helper (it cannot start, it dies, it answers nothing in
``ANSWER_SECONDS``), the caller checks the files in its own process: the findings are the same
either way, only slower.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Collection, Optional

from ...findings import Finding
from .hot_findings import findings_in, hot_files

if TYPE_CHECKING:
    from ..results.profile_data import ProfileData

ANSWER_SECONDS = 600.0  # the longest wait for the helper's findings before checking in this process


class StaticHelper:
    """One helper process (``start``), asked once (``findings``; later calls check in this process), then gone
    (``close``, also on leaving a ``with``)."""

    def __init__(self, process: Optional[subprocess.Popen[bytes]]) -> None:
        self.process = process

    @classmethod
    def start(cls) -> "StaticHelper":
        """Start the helper (a helper that cannot start leaves the checking to this process)."""
        package_root = str(Path(__file__).resolve().parents[3])  # the folder that holds ``torchtriage``
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        try:
            process = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, env=env)
        except (OSError, ValueError):
            process = None
        return cls(process)

    def findings(self, profile: "ProfileData", skip: Collection[str] = ()) -> list[Finding]:
        """The static findings of the profile's hot files (``hot_findings.static_findings``), from the helper when it answers."""
        paths = hot_files(profile, skip)
        if not paths:
            return []
        answer = self._ask([str(p.resolve()) for p in paths])
        return answer if answer is not None else findings_in(paths)

    def _ask(self, paths: list[str]) -> Optional[list[Finding]]:
        """Send the files; read the answer up to the end of the helper's stdout (it closes it before it exits)."""
        process = self.process
        if process is None or process.stdin is None or process.stdout is None or process.stdin.closed:
            return None  # no helper, or asked already
        try:
            process.stdin.write((json.dumps(paths) + "\n").encode())
            process.stdin.close()
            found = pickle.loads(_read_all(process.stdout.fileno(), ANSWER_SECONDS))
        except (OSError, TimeoutError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            process.kill()
            return None
        return found if isinstance(found, list) and all(isinstance(f, Finding) for f in found) else None

    def close(self) -> None:
        """End the helper: one that answered is exiting and is waited for; one never asked is stopped."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None and not process.stdin.closed:  # never asked: its loading is of no use now
            process.kill()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> "StaticHelper":
        return self

    def __exit__(self, kind: Optional[type[BaseException]], error: Optional[BaseException], trace: Optional[TracebackType]) -> None:
        self.close()


def _read_all(fd: int, seconds: float) -> bytes:
    """Everything ``fd`` gives until its end, waiting at most ``seconds`` in all (else ``TimeoutError``)."""
    deadline = time.monotonic() + seconds
    parts = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("the static-findings helper did not answer")
        part = os.read(fd, 1 << 16)
        if not part:
            return b"".join(parts)
        parts.append(part)


def _serve() -> int:
    """The helper's side: load the linter, read the files, write their findings."""
    from ...analysis.project import closure, program  # noqa: F401  (all loaded now, while the caller works)
    from ...analysis.rules import all_rules
    from ...checker import check_project_paths  # noqa: F401

    all_rules()
    line = sys.stdin.readline()
    if not line.strip():
        return 0  # closed unasked
    paths = [Path(p) for p in json.loads(line)]
    sys.stdout.buffer.write(pickle.dumps(findings_in(paths)))
    sys.stdout.flush()
    os.close(sys.stdout.fileno())  # the answer is whole: the caller reads on without waiting for this process to exit
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
