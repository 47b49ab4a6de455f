"""``ProfileData`` -> ``Diagnosis``: the bottleneck verdict with its evidence, advice and findings.

In: a ``results.ProfileData`` and the static findings of the hot files.  Out: a ``results.Diagnosis``
(verdicts, hot lines, runtime findings TTR5xx-TTR7xx, links to the static findings).  ``bottleneck`` is
the entry point (``diagnose``); ``device/`` holds the findings about the device's work, ``patterns/``
TensorBoard's Overview rules and torch's profiler pattern matcher, measured.
"""
