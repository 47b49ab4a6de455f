"""Wall time and peak RSS of one command, for the benches that compare tools or runs.

The command runs under a small wrapper interpreter, so ``getrusage(RUSAGE_CHILDREN)`` there is the
command's own: the largest peak RSS of any one process it waited for (a profiled run's child included),
not the bench's.  Output is discarded; a failure stops the bench with the tail of its stderr.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Optional

MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - start
print(proc.returncode, wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, repr(proc.stderr[-2000:]))
"""


def measure(command: list[str], cwd: Optional[Path] = None) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one run of ``command``."""
    result = subprocess.run([sys.executable, "-c", MEASURE, *command], cwd=cwd, capture_output=True, text=True, check=True)
    code, wall, peak_kib, stderr = result.stdout.split(" ", 3)
    if code != "0":
        raise SystemExit(f"{command[:4]} failed ({code}): {stderr}")
    return float(wall), int(peak_kib) / 1024
