"""Lines torch's profiler itself prints into the profiled script's output.

torch 2.13 writes ``profiler_start`` / ``profiler_stop`` USDT markers and a
CPUAllocator warning about blocks allocated before profiling began (older
releases: ``STAGE:... Completed Stage: Warm Up`` lines, and the warning without
its date); no environment variable silences them.  They stay in
``output.log`` but are not echoed to the user, who should see only the
script's own output (the ``%%torchtriage`` magic filters the cell's fd 2 the
same way, :mod:`torchtriage.jupyter.native_stderr`).  Under
torchrun, torch prefixes a rank's warnings with ``[rank<k>]:``.
"""

from __future__ import annotations

import re

_PROFILER_NOISE = re.compile(
    r"^(USDT:\S+ \S+ \d+:\d+ SyncActivityProfilerHandler\.cpp:\d+\] profiler_(start|stop)"
    r"|STAGE:\S+ \S+ \d+:\d+ ActivityProfilerController\.cpp:\d+\] Completed Stage: "
    r"|(?:\[rank\d+\]:)?\[W(?:\d+ [\d:.]+(?: \d+)?)? CPUAllocator\.cpp:\d+\] Memory block of unknown size was allocated before the profiling started)"
)


def is_profiler_noise(line: str) -> bool:
    """Whether an output line was printed by torch's profiler rather than the script."""
    return bool(_PROFILER_NOISE.match(line))
