"""``torchtriage compare``: two profile runs of a script, before and after a change.

runs (load and check the run folders, find the previous run) -> spread (how
much each run moves by itself) -> matching (lines across edits, fixed
findings) -> deltas (each number before/after, measurable or not) -> verdict
(the sentence) -> document (compare.json, report.html) -> text (the terminal
table).
"""

from .document import SCHEMA_VERSION, compare_runs, load_comparison, load_schema, write_comparison
from .runs import COMPARE_JSON, CompareError, Run, load_run, previous_run

__all__ = [
    "COMPARE_JSON",
    "SCHEMA_VERSION",
    "CompareError",
    "Run",
    "compare_runs",
    "load_comparison",
    "load_run",
    "load_schema",
    "previous_run",
    "write_comparison",
]
