"""The typed results of one profiled run, shared by every later stage.

In: nothing of the runtime (the bottom of the stage).  Out: ``ProfileData`` (time, syncs and memory per
source line), ``DeviceFacts`` (the device's work: shapes, memory at the peak, GPU idle gaps) and the
diagnosis types (``Verdict``, ``Hotspot``, ``Evidence``, ``Recommendation``, ``Diagnosis``).
"""
