"""Findings from two well-known rule sets, each with its measured cost per step and its line.

In: a ``results.ProfileData`` (for a trace, with ``extra["trace_patterns"]``: ``results.trace_patterns``),
the static findings and the hot lines.  Out: runtime findings.  ``overview`` restates the seven Overview
recommendations of TensorBoard's profiler plugin (thresholds kept), ``matcher`` the anti-patterns of
torch's profiler pattern matcher (``torch/profiler/_pattern_matcher.py``); ``findings.pattern_findings``
runs both.  The matcher's fp32-matmul and fp16-shape patterns are TTR602 and TTR601 (``device``).
"""
