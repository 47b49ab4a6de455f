"""Findings about the device's work: GPU idle gaps, Tensor Cores, memory at the peak, attention.

In: a ``results.ProfileData`` with its ``DeviceFacts``.  Out: runtime findings (TTR6xx, TTR7xx) and the
report.json sections that show the facts behind them.  ``findings.device_findings`` runs them all.
"""
